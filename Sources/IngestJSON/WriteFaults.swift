import Synchronization

/// A fault-injection seam for tests: makes the next writes to files whose path ends
/// with a given suffix fail with a given errno (ENOSPC, say), as a full disk would.
/// Nothing sets it outside tests (it is internal; tests reach it with @testable).
enum WriteFaults {
    private static let rule = Mutex<(suffix: String, errno: Int32, remaining: Int)?>(nil)

    static func fail(pathsEndingWith suffix: String, errno: Int32, times: Int = 1) {
        rule.withLock { $0 = (suffix, errno, times) }
    }

    static func clear() { rule.withLock { $0 = nil } }

    /// The errno to fail a write to `path` with, if a rule says so (and counts it).
    static func injected(for path: String) -> Int32? {
        rule.withLock { rule -> Int32? in
            guard let current = rule, current.remaining > 0, path.hasSuffix(current.suffix) else { return nil }
            rule!.remaining -= 1
            return current.errno
        }
    }
}
