import Foundation
import IngestJSON
import IngestStore
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Where a PostgreSQL run's split keeps a feed over HTTP as it arrives (`HTTPByteSource`'s
/// spool). The split's chunk directory is temporary and goes with its process; the spool
/// must outlive it, so that a split stopped midway (SIGINT, a lost connection, a crash) and
/// taken up again on this machine, by `ingest resume`, `import` or `join`, reads what
/// arrived from disk and asks the server only for the rest (`Range`). It is named after the
/// store, the run and the feed, in the temporary directory, private to this user, and goes
/// when a split of the run reads the feed to its end.
enum HTTPSpoolDirectory {
    /// The spool directory of `run` of the store at `url` reading `feed`.
    static func path(url: PostgresURL, run: Int, feed: String) -> String {
        let name = SHA256Digest.hex(Array("\(url.endpoint)\u{0}\(url.description)\u{0}\(run)\u{0}\(feed)".utf8)).prefix(24)
        return FileManager.default.temporaryDirectory.appendingPathComponent("ingest-http-run\(run)-\(name)").path
    }

    /// Makes the directory (mode 0700), or finds the one an earlier split of the run left.
    /// Nil when the name is taken by anything else: a link, a file, a directory of another
    /// user or that others may write (the temporary directory is shared: its spool must be
    /// this user's alone); the split then keeps the spool in its chunk directory, as before.
    static func open(url: PostgresURL, run: Int, feed: String, logger: Logger) -> String? {
        let path = path(url: url, run: run, feed: feed)
        if mkdir(path, 0o700) == 0 { return path }
        let failure = errno
        var info = stat()
        if failure == EEXIST, lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(),
           info.st_mode & 0o077 == 0 {
            return path
        }
        logger.warning("the feed's download is kept with the chunks instead (a resumed split downloads it again)",
                       metadata: ["directory": "\(path)",
                                  "reason": "\(failure == EEXIST ? "taken by something that is not this user's private directory" : String(cString: strerror(failure)))"])
        return nil
    }

    /// Removes the spool's own files, then the directory if nothing else is in it.
    static func remove(_ path: String) {
        for name in [HTTPByteSource.spoolName, HTTPByteSource.validatorsName] {
            try? FileOps.removeRegularFile(path + "/" + name)
        }
        _ = rmdir(path)
    }
}
