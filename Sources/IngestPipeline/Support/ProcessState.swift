import Foundation

/// What Linux says of a process on this machine.
enum ProcessState {
    /// Whether process `pid` is stopped by a signal (SIGSTOP, SIGTSTP, a debugger): its state
    /// in /proc/PID/stat, after the name's closing parenthesis ("4242 (ingest) T …"), is T or t.
    static func isStopped(pid: Int) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else {
            return false
        }
        let state = text[text.index(after: close)...].first { $0 != " " }
        return state == "T" || state == "t"
    }
}
