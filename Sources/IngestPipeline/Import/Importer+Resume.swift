import IngestJSON

extension Importer {
    /// An importer that continues `options.store`'s unfinished run with the feed, pipeline,
    /// chunks and sizes the run recorded; `options` gives the rest (workers, logger,
    /// `maxRejects`). On PostgreSQL it joins the newest unfinished run (as
    /// `Importer(joining:options:)`); on SQLite a run whose feed was read once (a pipe)
    /// goes on from its finished split's chunk files.
    /// - Throws: `ImportError` when the store has no unfinished run, or its run cannot be
    ///   continued from here (no pipeline recorded; a feed read once without a finished
    ///   split); what `ImportStatus.read(store:)` and `PipelineSpec.load(path:)` throw.
    public convenience init(resuming options: Options) throws {
        if options.isPostgres {
            self.init(joining: nil, options: options)
            return
        }
        let store = options.store
        let status = try ImportStatus.read(store: store)
        guard let run = status.unfinishedRun else {
            throw ImportError("\(store): nothing to resume: its last import, run \(status.latest.number), is \(status.latest.state)")
        }
        guard let pipeline = run.pipeline else {
            throw ImportError("\(store) does not record run \(run.number)'s pipeline path; import its feed again instead")
        }
        // A feed read once is not read again: a finished split's chunk files stand for it
        // (by the run's record too: a process substitution's /dev/fd path is gone by now).
        let withoutFeed = run.feedWasReadOnce || FileOps.isReadOnce(run.feed)
        if withoutFeed, !SplitManifest.isFinished(run.chunks) {
            throw ImportError("\(store): run \(run.number) read its feed once (\(run.feed)), and \(run.chunks) holds no finished split of it: import the same feed again")
        }
        var resumed = options
        resumed.feed = run.feed
        resumed.chunks = run.chunks
        resumed.saveEvery = run.saveEvery
        resumed.chunkSize = run.chunkSize
        resumed.pipelinePath = pipeline
        resumed.withoutFeed = withoutFeed
        self.init(spec: try PipelineSpec.load(path: pipeline), options: resumed)
    }
}
