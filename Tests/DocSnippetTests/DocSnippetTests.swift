import Foundation
import IngestTestSupport
import Testing

/// One snippet of the documentation (or several, when one continues another), as
/// extract-snippets.sh wrote it into Snippets/: compiled with this target, and run here
/// unless its document marks it compile-only.
struct DocSnippet: Sendable, CustomTestStringConvertible {
    let document: String
    let numbers: [Int]
    let compileOnly: String?
    let postgres: Bool
    let run: (@MainActor @Sendable (DocScene) async throws -> Void)?

    init(_ document: String, _ numbers: [Int], postgres: Bool = false, run: @escaping @MainActor @Sendable (DocScene) async throws -> Void) {
        (self.document, self.numbers, self.compileOnly, self.postgres, self.run) = (document, numbers, nil, postgres, run)
    }

    init(_ document: String, _ numbers: [Int], compileOnly reason: String) {
        (self.document, self.numbers, self.compileOnly, self.postgres, self.run) = (document, numbers, reason, false, nil)
    }

    var testDescription: String {
        "\((document as NSString).lastPathComponent) snippet\(numbers.count > 1 ? "s" : "") \(numbers.map(String.init).joined(separator: "+"))"
    }

    static let all: [DocSnippet] = readme + importingAFeed + gettingStarted + objectLifecycleAndValidation + usingAContainer + batchRequests
        + theObjectGraph + mergePoliciesAndConflicts + undoAndRedo + typedClassesAndXcodeModels + fetchedResultsControllers + changeHistory + queriesAndPredicates + operations + writingPipelines + importingOnManyMachines + commandLine
    static let runnable = all.filter { $0.run != nil && (!$0.postgres || PostgresServer.isAvailable) }
}

/// Every Swift snippet of the README and the DocC catalogs compiles (Snippets/ is part of
/// this target) and runs without throwing, each in a scene of its own (DocScene).
@Suite struct DocSnippetTests {
    @MainActor
    @Test(arguments: DocSnippet.runnable) func theSnippetRuns(_ snippet: DocSnippet) async throws {
        let scene = try DocScene(postgres: snippet.postgres)
        try await snippet.run?(scene)
    }

    /// Snippets/ is what extract-snippets.sh makes of the documents as they are now.
    @Test func theSnippetsAreTheDocumentsOwn() throws {
        let root = DocScene.packageRoot
        let fresh = try TemporaryDirectory()
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = [root + "/Tests/DocSnippetTests/extract-snippets.sh", fresh.path]
        let errors = Pipe()
        script.standardError = errors
        try script.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        script.waitUntilExit()
        try #require(script.terminationStatus == 0, "extract-snippets.sh failed: \(message)")
        let committed = root + "/Tests/DocSnippetTests/Snippets"
        let names = try Set(FileManager.default.contentsOfDirectory(atPath: committed))
            .union(FileManager.default.contentsOfDirectory(atPath: fresh.path))
        for name in names.sorted() {
            let old = (try? String(contentsOfFile: committed + "/" + name, encoding: .utf8)) ?? ""
            let new = (try? String(contentsOfFile: fresh.file(name), encoding: .utf8)) ?? ""
            let (before, after) = (Self.sections(old), Self.sections(new))
            let changed = Set(after.keys.filter { before[$0] != after[$0] }).union(before.keys.filter { after[$0] == nil })
            if let first = changed.sorted().first {
                Issue.record("\(first) changed; run Tests/DocSnippetTests/extract-snippets.sh")
            } else if old != new {
                Issue.record("Tests/DocSnippetTests/Snippets/\(name) is not what the documents make of it; run Tests/DocSnippetTests/extract-snippets.sh")
            }
        }
    }

    /// The command-line reference article is what `cli-reference.py` makes of the commands'
    /// help now: an option added, renamed or reworded without it fails here.
    @Test func theCommandLineReferenceIsTheCommandsOwnHelp() throws {
        let root = DocScene.packageRoot
        let fresh = try TemporaryDirectory()
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        script.arguments = [root + "/Tests/DocSnippetTests/cli-reference.py", IngestBinary.path, fresh.file("reference.md")]
        try script.run()
        script.waitUntilExit()
        try #require(script.terminationStatus == 0, "cli-reference.py failed")
        let article = root + "/Sources/IngestPipeline/IngestPipeline.docc/CommandLineReference.md"
        let committed = try String(contentsOfFile: article, encoding: .utf8)
        let made = try String(contentsOfFile: fresh.file("reference.md"), encoding: .utf8)
        let first = zip(committed.split(separator: "\n", omittingEmptySubsequences: false), made.split(separator: "\n", omittingEmptySubsequences: false))
            .first { $0 != $1 }
        if committed != made { Issue.record("CommandLineReference.md differs from the commands' help (first: \(first.map { "\($0.0) → \($0.1)" } ?? "a line added or removed")); run: python3 Tests/DocSnippetTests/cli-reference.py .build/debug/ingest \(article)") }
    }

    /// A generated file's snippets by their "MARK: document, snippet N" line.
    static func sections(_ text: String) -> [String: String] {
        var sections: [String: String] = [:]
        var current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let range = line.range(of: "// MARK: ") {
                current = String(line[range.upperBound...])
            } else if line.hasPrefix("}") || line.hasPrefix("extension DocSnippet") {
                current = nil
            }
            if let current { sections[current, default: ""] += line + "\n" }
        }
        return sections
    }
}

/// Reported as skipped, with the reason, where no PostgreSQL server can start: the
/// snippets marked `postgres` were then compiled, not run.
@Test(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
func thePostgresSnippetsRanToo() {}
