import Foundation

/// Where the tests keep their files: `/dev/shm` when it is a tmpfs with 4 GiB free, else
/// the temporary directory. The tests' stores are written with `fsync` and made and removed
/// by the thousand; on /tmp's ext4 that is kernel work on the two cores the suite shares,
/// on a tmpfs little (the quick suite 148–164 s against 188 s, alternated; Performance,
/// "Session 42"). Being memory, whatever a test makes there must go when it ends.
public enum ScratchRoot {
    /// `INGEST_TEST_TMPDIR` when set; otherwise as above.
    public static let path: String = {
        if let given = ProcessInfo.processInfo.environment["INGEST_TEST_TMPDIR"], !given.isEmpty { return given }
        return sharedMemory ?? FileManager.default.temporaryDirectory.path
    }()

    /// `/dev/shm` when it is a writable tmpfs with 4 GiB free.
    public static let sharedMemory: String? = {
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        let shmIsTmpfs = mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && fields[1] == "/dev/shm" && fields[2] == "tmpfs"
        }
        var fs = statvfs()
        if shmIsTmpfs, statvfs("/dev/shm", &fs) == 0, access("/dev/shm", W_OK | X_OK) == 0,
           UInt64(fs.f_bavail) * UInt64(fs.f_frsize) >= 4 << 30 {
            return "/dev/shm"
        }
        return nil
    }()
}
