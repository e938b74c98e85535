//! Holds an outside-edit watch (`scriptorium_search::watch`) on the memory workspace given as
//! the only argument until standard input closes: what a long-lived process does, for
//! measuring a search with and without one (`strace -c scriptorium search …` beside it).

fn main() -> std::io::Result<()> {
    let Some(root) = std::env::args_os().nth(1) else {
        eprintln!("usage: outside_watch <memory workspace>");
        std::process::exit(2);
    };
    let watch = scriptorium_search::watch::OutsideWatch::start(std::path::Path::new(&root))?;
    if watch.is_none() {
        eprintln!("another process watches this workspace already");
        std::process::exit(1);
    }
    eprintln!("watching; close standard input to stop");
    std::io::copy(&mut std::io::stdin(), &mut std::io::sink())?;
    Ok(())
}
