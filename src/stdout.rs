//! Standard output as every subcommand writes it. A reader that closes the pipe early
//! (`shardsim run … | head -1`) is not an error: the rest of the output is dropped quietly and
//! the subcommand ends as it would have (exit 0, or 1 for a failed check). Any other failure
//! to write (a full disk behind `> file`) is an error naming standard output, exit 3, never a
//! panic. Standard error is written through [`eprint_line`], which never panics: when even
//! it cannot be written (`2>/dev/full`), the line is dropped and the exit code still tells.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::IoFailure;

/// Set once the reader has closed standard output: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output and flushes it.
pub fn print(text: impl AsRef<[u8]>) -> Result<(), IoFailure> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let closed = write_to(&mut io::stdout().lock(), text.as_ref())?;
    if closed {
        CLOSED.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// Writes one line to standard error; a failure to write it is ignored (there is nowhere left
/// to report it), where `eprintln!` would panic.
pub fn eprint_line(line: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.write_all(b"\n");
    let _ = err.flush();
}

/// Writes `bytes` to `out` and flushes it; `Ok(true)` when the reader had closed it, an
/// [`IoFailure`] naming standard output for any other failure.
pub fn write_to(out: &mut impl Write, bytes: &[u8]) -> Result<bool, IoFailure> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(false),
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(true),
        Err(err) => Err(IoFailure::new(
            std::path::Path::new("standard output"),
            format!("cannot write: {err}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_quiet_and_a_full_disk_names_standard_output() {
        assert_eq!(
            write_to(&mut Failing(io::ErrorKind::BrokenPipe), b"x"),
            Ok(true)
        );
        let full = write_to(&mut Failing(io::ErrorKind::StorageFull), b"x").unwrap_err();
        assert!(
            full.to_string()
                .starts_with("standard output: cannot write"),
            "{full}"
        );
        let mut fine = Vec::new();
        assert_eq!(write_to(&mut fine, b"x"), Ok(false));
        assert_eq!(fine, b"x");
    }
}
