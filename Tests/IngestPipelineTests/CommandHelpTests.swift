import IngestTestSupport
import Testing

/// The command line's conventions: every command's help shows an example, and the
/// tool says its version.
@Suite struct CommandHelpTests {
    @Test(arguments: [["demo"], ["generate"], ["split"], ["infer"], ["import"], ["resume"], ["status"], ["query"], ["bench"],
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
