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
/// store, the run and the feed, in the temporary directory, private to this user, held by
/// one split at a time (an advisory lock on the directory), and goes when a split of the
/// run reads the feed to its end.
final class HTTPSpoolDirectory {
    let path: String
    /// The directory, open and locked (`flock`) while this split uses it.
    private var descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close() }

    /// The spool directory of `run` of the store at `url` reading `feed`.
    static func path(url: PostgresURL, run: Int, feed: String) -> String {
        let name = SHA256Digest.hex(Array("\(url.endpoint)\u{0}\(url.description)\u{0}\(run)\u{0}\(feed)".utf8)).prefix(24)
        return FileManager.default.temporaryDirectory.appendingPathComponent("ingest-http-run\(run)-\(name)").path
    }

    /// Makes the directory (mode 0700), or finds the one an earlier split of the run left,
    /// and locks it. Nil when the name is taken by anything else (a link, a file, a directory
    /// of another user or that others may write: the temporary directory is shared, the
    /// spool must be this user's alone), or when another split on this machine holds it (a
    /// stalled process whose split was taken over): the split then keeps its spool in its
    /// chunk directory, as before.
    /// `quiet`: a refusal is not logged (the caller only tidies up).
    static func open(url: PostgresURL, run: Int, feed: String, logger: Logger, quiet: Bool = false) -> HTTPSpoolDirectory? {
        let path = path(url: url, run: run, feed: feed)
        func refuse(_ reason: String) -> HTTPSpoolDirectory? {
            if quiet { return nil }
            logger.warning("the feed's download is kept with the chunks instead (a resumed split downloads it again)",
                           metadata: ["directory": "\(path)", "reason": "\(reason)"])
            return nil
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST { return refuse(String(cString: strerror(errno))) }
        // Opened without following a link, then checked through the descriptor: what is checked is what is used.
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return refuse("taken by something that is not a directory (\(String(cString: strerror(errno))))") }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            Glibc.close(descriptor)
            return refuse("a directory that is not this user's alone")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(descriptor)
            return refuse("another split on this machine is using it")
        }
        return HTTPSpoolDirectory(path: path, descriptor: descriptor)
    }

    /// Removes this machine's spool of `run`, when there is one, once the run has ended
    /// (finished by any process, or abandoned): a split stopped midway left it for a later
    /// split here, and the run was ended without one. Nothing is said when there is none,
    /// nor when the name is not this user's spool (`open` refuses it) or another split
    /// holds it.
    static func discard(url: PostgresURL, run: Int, feed: String, logger: Logger) {
        guard HTTPByteSource.isURL(feed) else { return }
        // `open` makes the directory when it is not there: only one that is there is opened.
        var info = stat()
        guard lstat(path(url: url, run: run, feed: feed), &info) == 0 else { return }
        guard let spool = open(url: url, run: run, feed: feed, logger: logger, quiet: true) else { return }
        if spool.remove() {
            logger.info("removed the feed's download kept for a later split of the run, which has ended", metadata: ["directory": "\(spool.path)"])
        }
    }

    /// Removes the spool's own files (and temporaries its validators' writes left), then the
    /// directory if nothing else is in it; true when the directory went.
    @discardableResult
    func remove() -> Bool {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter {
            $0 == HTTPByteSource.spoolName || $0 == HTTPByteSource.validatorsName
                || FileOps.isLeftoverTemporary($0, of: HTTPByteSource.validatorsName)
        }
        // Through the locked descriptor: the directory checked when it was opened is the one emptied.
        if descriptor >= 0 { try? FileOps.removeRegularFiles(names, inDirectory: descriptor, path: path) }
        let removed = rmdir(path) == 0
        close()
        return removed
    }

    /// Unlocks it, for the next split of the run.
    func close() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
    }
}
