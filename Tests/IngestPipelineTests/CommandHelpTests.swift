import Foundation
import IngestTestSupport
import Testing

/// The command line's conventions: every command's help shows an example, and the
/// tool says its version.
@Suite struct CommandHelpTests {
    @Test(arguments: [["demo"], ["generate"], ["split"], ["infer"], ["import"], ["join"], ["resume"], ["replay"], ["status"], ["query"], ["history"], ["codegen"], ["bench"],
                      ["bench", "split"], ["bench", "store"], ["bench", "fetch"], ["bench", "import"]])
    func everyCommandsHelpHasAnExample(_ command: [String]) throws {
        let outcome = try IngestBinary.run(command + ["--help"])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("Example"), "\(command.joined(separator: " ")) --help has no example")
    }

    @Test func versionAndCompletionScript() throws {
        let version = try IngestBinary.run(["--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty)
        let completion = try IngestBinary.run(["--generate-completion-script", "bash"])
        #expect(completion.status == 0 && completion.stdout.contains("_ingest"))
    }
}

/// Logs go to stderr at the level asked for: the run's stages at info, each chunk and
/// save at debug, nothing per record above trace.
@Suite struct LoggingTests {
    static let pipeline = PipelineSpecTests.root.appendingPathComponent("Pipelines/photos.json").path

    @Test func levelsSayWhatTheyPromise() throws {
        let dir = try TemporaryDirectory()
        let feed = try dir.write("feed.json", Array(#"[{"id":"a"},{"id":"b"},{"title":"no id"}]"#.utf8))
        func run(_ level: String) throws -> String {
            let outcome = try IngestBinary.run(["import", feed, "--pipeline", Self.pipeline, "--store", dir.file("\(level).sqlite"),
                                                "--quiet", "--log-level", level])
            #expect(outcome.status == 3)
            return outcome.stderr
        }
        #expect(try run("warning").isEmpty)
        let info = try run("info")
        #expect(info.contains(" info import run started ") && info.contains(" info import run finished "))
        #expect(!info.contains(" debug "))
        let debug = try run("debug")
        #expect(debug.contains(" debug chunk started ") && debug.contains(" debug saved ") && debug.contains(" debug turn to commit "))
        #expect(!debug.contains("record rejected"))
        let trace = try run("trace")
        #expect(trace.contains(" trace record rejected ") && trace.contains("reason=\"id: missing required value"), "\(trace)")
    }
}
