//! Reads that must not wait for the disk. The network thread runs short
//! reads itself (a hand-off to another thread costs more than the read);
//! one that would wait for the disk would hold every connection of that
//! thread meanwhile. Inside `memory_only`, the engine reads only what is
//! in memory (memtables and the block cache) and fails a read that needs
//! the disk with `StorageError::NotInMemory`, which the caller then runs
//! again where waiting is allowed.
//!
//! The limit is the calling thread's, for the length of the call: it
//! travels with the read through every layer between the transport and
//! the engine without each having to pass it on.

use std::cell::Cell;

thread_local! {
    static MEMORY_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's storage reads limited to memory.
pub fn memory_only<T>(f: impl FnOnce() -> T) -> T {
    /// Puts the thread's previous limit back, on return or unwind.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            MEMORY_ONLY.with(|m| m.set(self.0));
        }
    }
    let _restore = Restore(MEMORY_ONLY.with(|m| m.replace(true)));
    f()
}

/// Whether this thread's storage reads are limited to memory.
pub fn reads_memory_only() -> bool {
    MEMORY_ONLY.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_inside_the_call_only() {
        assert!(!reads_memory_only());
        let inside = memory_only(|| {
            let nested = memory_only(reads_memory_only);
            (reads_memory_only(), nested)
        });
        assert_eq!(inside, (true, true));
        assert!(!reads_memory_only());
    }

    #[test]
    fn the_limit_is_lifted_after_a_panic() {
        let caught = std::panic::catch_unwind(|| memory_only(|| panic!("read failed")));
        assert!(caught.is_err());
        assert!(!reads_memory_only());
    }

    #[test]
    fn other_threads_are_not_limited() {
        memory_only(|| {
            let other = std::thread::spawn(reads_memory_only)
                .join()
                .expect("thread");
            assert!(!other);
        });
    }
}
