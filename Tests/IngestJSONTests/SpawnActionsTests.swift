import Foundation
import Testing
@testable import IngestJSON

@Suite struct SpawnActionsTests {
    /// A child that outlives its start holds no pipe its parent opened without O_CLOEXEC,
    /// so the pipe's reader sees its end when the parent's writer closes (found: a FIFO
    /// test waited forever once the shared PostgreSQL server held the FIFO's write end).
    @Test func aLongLivedChildHoldsNoPipeOfTheParentsOpen() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0, "a pipe without O_CLOEXEC, as a test's writer thread may have open")
        defer { close(ends[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        SpawnActions.closeInheritedDescriptors(&actions)
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sleep", "30"].map { (word: String) in strdup(word) } + [nil]
        defer { argv.forEach { free($0) } }
        try #require(posix_spawn(&pid, "/bin/sleep", &actions, nil, argv, environ) == 0)
        defer {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
        close(ends[1])
        // The write end's only holder is gone: the reader is told at once, not in 30 s.
        var request = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        let ready = poll(&request, 1, 5_000)
        #expect(ready == 1)
        guard ready == 1 else { return }
        #expect(request.revents & Int16(POLLHUP) != 0)
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) == 0)
    }
}
