import Synchronization

/// A fault-injection seam for tests: makes the next writes to files whose path ends
/// with a given suffix fail with a given errno (ENOSPC, say), as a full disk would.
/// Nothing sets it outside tests (it is internal; tests reach it with @testable).
///
/// Rules are kept per suffix, so tests running at once, each naming a path in its own
/// temporary directory, never meet each other's faults.
enum WriteFaults {
    private static let rules = Mutex<[String: (errno: Int32, remaining: Int)]>([:])

    static func fail(pathsEndingWith suffix: String, errno: Int32, times: Int = 1) {
        rules.withLock { $0[suffix] = (errno, times) }
    }

    /// Drops the rule for `suffix`.
    static func clear(pathsEndingWith suffix: String) { _ = rules.withLock { $0.removeValue(forKey: suffix) } }

    /// The errno to fail a write to `path` with, if a rule says so (and counts it).
    static func injected(for path: String) -> Int32? {
        rules.withLock { rules -> Int32? in
            guard !rules.isEmpty else { return nil }
            for (suffix, rule) in rules where rule.remaining > 0 && path.hasSuffix(suffix) {
                rules[suffix]!.remaining -= 1
                return rule.errno
            }
            return nil
        }
    }
}
