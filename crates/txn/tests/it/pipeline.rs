//! Transaction pipeline tests: begin, edit, install, recovery, faults, concurrency, archiving.
