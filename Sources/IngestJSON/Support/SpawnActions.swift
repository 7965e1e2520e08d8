#if canImport(Glibc)
package import Glibc
#endif

/// What a child started by posix_spawn is given besides its standard streams: nothing.
///
/// A child inherits every descriptor its parent had open without O_CLOEXEC at that
/// moment, opened by any thread: a pipe's or a FIFO's write end, say. A child that
/// outlives its start (the PostgreSQL server `pg_ctl` leaves running) then holds that
/// write end, and the pipe's reader never sees its end. Found: a test reading a FIFO
/// waited forever when the tests' shared PostgreSQL server started while the test's
/// writer thread had the FIFO open.
package enum SpawnActions {
    /// Adds "close every descriptor from 3 up" to `actions`, after the actions already
    /// there. This is glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, looked up
    /// when first used because Swift's Glibc module does not declare it; with an older C
    /// library this adds nothing.
    package static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        guard let closeFrom = addCloseFrom else { return }
        _ = closeFrom(&actions, 3)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()
}
