//! Data-driven suites over third-party data (`SCRIPTORIUM_TEST_DATA`): reported as not run when
//! the data is absent, never as passed.

#![expect(
    clippy::disallowed_methods,
    reason = "tests and benches build and inspect their workspaces with std::fs"
)]

#[path = "../recall/harness.rs"]
mod harness;

use scriptorium_testkit::{Failed, data_trial, run};

fn main() -> std::process::ExitCode {
    run(vec![data_trial("locomo_recall_floors", locomo_recall_floors)])
}

/// Regression floors for the LoCoMo dev split, measured at the default floor (release run:
/// recall@5 53.3 %, recall@10 59.6 %, negatives empty 80 %), minus a margin.
fn locomo_recall_floors(data: &std::path::Path) -> Result<(), Failed> {
    let mut locomo = harness::prepare(data);
    let figures = harness::measure(&mut locomo, scriptorium_search::DEFAULT_MIN_COVERAGE);
    println!("{figures}");
    let no_floor = harness::measure(&mut locomo, 0.0);
    println!("{no_floor}");
    if figures.questions < 700 {
        return Err(format!("expected the 760 answerable questions: {figures}").into());
    }
    if figures.recall_at_5 < 0.50 || figures.recall_at_10 < 0.56 {
        return Err(format!("recall regressed: {figures}").into());
    }
    if no_floor.recall_at_5 - figures.recall_at_5 > 0.015 {
        return Err(format!("the floor costs more than 1.5 points of recall@5: {figures}").into());
    }
    if figures.negative_empty < 0.80 {
        return Err(format!("fewer than 80 % of negative queries return nothing: {figures}").into());
    }
    Ok(())
}
