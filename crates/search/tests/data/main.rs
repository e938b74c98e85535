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

/// The recall targets on the LoCoMo dev split at the default floor (release run: recall@5
/// 75.4 %, recall@10 81.1 %, unrelated questions empty 96.2 %, absent facts empty 80 %; the
/// figures are deterministic, so the gates sit at the targets, not below a margin).
fn locomo_recall_floors(data: &std::path::Path) -> Result<(), Failed> {
    let mut locomo = harness::prepare(data);
    let figures = harness::measure(&mut locomo, scriptorium_search::DEFAULT_MIN_COVERAGE);
    println!("{figures}");
    let no_floor = harness::measure(&mut locomo, 0.0);
    println!("{no_floor}");
    if figures.questions < 700 {
        return Err(format!("expected the 760 answerable questions: {figures}").into());
    }
    if figures.recall_at_5 < 0.75 || figures.recall_at_10 < 0.80 {
        return Err(format!("recall regressed: {figures}").into());
    }
    if no_floor.recall_at_5 - figures.recall_at_5 > 0.015 {
        return Err(format!("the floor costs more than 1.5 points of recall@5: {figures}").into());
    }
    if figures.negative_empty < 0.95 {
        return Err(
            format!("fewer than 95 % of unrelated questions return nothing: {figures}").into()
        );
    }
    if figures.absent_empty < 0.75 {
        return Err(
            format!("fewer than 75 % of absent-fact questions return nothing: {figures}").into()
        );
    }
    Ok(())
}
