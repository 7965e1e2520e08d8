#!/usr/bin/env bash
# Extracts every ```swift snippet of the README and the DocC catalogs into Swift files of the
# DocSnippetTests target, one file per document, so that the snippets compile with the tests
# and DocSnippetTests runs them. Run it from anywhere after changing a snippet:
#
#   Tests/DocSnippetTests/extract-snippets.sh            # writes Tests/DocSnippetTests/Snippets/
#   Tests/DocSnippetTests/extract-snippets.sh OUT_DIR    # writes OUT_DIR/ (what the freshness test does)
#
# Each snippet becomes a method of `DocScene` (DocScene.swift), so a fragment's free names
# (`context`, `editor`, `model`, `spec`…) are the scene's, made fresh for each test. On the
# way through:
#   - `import` lines move to the top of the document's file (each file imports what its
#     document's snippets import, and nothing else: a missing import fails the build);
#   - top-level type declarations (`extension`, `class`, `struct`, `enum`, `protocol`,
#     `actor`, with their attributes) move to file scope;
#   - string literals naming a file ("photos.sqlite", "Pipelines/photos.json") become
#     `path("…")`, the file in the test's temporary directory (or in the package, for
#     Pipelines/ and Fixtures/), and "postgresql://…" literals become `postgresURL("…")`, a
#     database of the test's own server;
#   - each top-level `let`/`var` gets `_ = name` after the snippet, as top-level code would
#     not warn about a value it only shows.
# A snippet may be preceded by an HTML comment (invisible in the rendered Markdown):
#   <!-- snippet: continues -->                 one function with the snippet before it
#   <!-- snippet: continues N -->               one function with snippet N (the snippets between stand apart)
#   <!-- snippet: compile-only: REASON -->      compiled, not run, for REASON
#   <!-- snippet: postgres -->                  runs only where PostgreSQL's binaries are
# (several, separated by ";").
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/Tests/DocSnippetTests/Snippets}"
mkdir -p "$out"

# document path (from the package root) and the name of its generated file
documents=(
    "README.md:README"
    "Sources/IngestPipeline/IngestPipeline.docc/ImportingAFeed.md:ImportingAFeed"
    "Sources/IngestStore/IngestStore.docc/GettingStarted.md:GettingStarted"
    "Sources/IngestStore/IngestStore.docc/ObjectLifecycleAndValidation.md:ObjectLifecycleAndValidation"
    "Sources/IngestStore/IngestStore.docc/UsingAContainer.md:UsingAContainer"
    "Sources/IngestStore/IngestStore.docc/BatchRequests.md:BatchRequests"
    "Sources/IngestStore/IngestStore.docc/TheObjectGraph.md:TheObjectGraph"
    "Sources/IngestStore/IngestStore.docc/MergePoliciesAndConflicts.md:MergePoliciesAndConflicts"
    "Sources/IngestStore/IngestStore.docc/UndoAndRedo.md:UndoAndRedo"
    "Sources/IngestStore/IngestStore.docc/TypedClassesAndXcodeModels.md:TypedClassesAndXcodeModels"
    "Sources/IngestStore/IngestStore.docc/FetchedResultsControllers.md:FetchedResultsControllers"
    "Sources/IngestStore/IngestStore.docc/ChangeHistory.md:ChangeHistory"
    "Sources/IngestStore/IngestStore.docc/QueriesAndPredicates.md:QueriesAndPredicates"
    "Sources/IngestPipeline/IngestPipeline.docc/Operations.md:Operations"
    "Sources/IngestPipeline/IngestPipeline.docc/WritingPipelines.md:WritingPipelines"
    "Sources/IngestPipeline/IngestPipeline.docc/ImportingOnManyMachines.md:ImportingOnManyMachines"
    "Sources/IngestPipeline/IngestPipeline.docc/CommandLine.md:CommandLine"
)

for entry in "${documents[@]}"; do
    document="${entry%%:*}"
    name="${entry##*:}"
    LC_ALL=C awk -v document="$document" -v name="$name" '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    function ident(s) { return s == toupper(s) ? tolower(s) : tolower(substr(s, 1, 1)) substr(s, 2) }
    # Replaces file-name and PostgreSQL-URL string literals by the scene'"'"'s substitutes.
    function substitute(line,    out, literal) {
        out = ""
        while (match(line, /"(postgresql:\/\/[^"]*|[A-Za-z0-9_\/.-]+\.(sqlite|json|ndjson|gz))"/)) {
            literal = substr(line, RSTART, RLENGTH)
            out = out substr(line, 1, RSTART - 1) (literal ~ /^"postgresql:/ ? "postgresURL(" literal ")" : "path(" literal ")")
            line = substr(line, RSTART + RLENGTH)
        }
        return out line
    }
    BEGIN { count = 0; fns = 0; marks = ""; infence = 0 }
    !infence && /^[ \t]*<!-- snippet:.*-->[ \t]*$/ {
        m = $0; sub(/^[ \t]*<!-- snippet:/, "", m); sub(/-->[ \t]*$/, "", m); marks = trim(m); next
    }
    !infence && /^[ \t]*```swift[ \t]*$/ {
        infence = 1; indent = index($0, "`") - 1; count++
        continues = 0; compile = ""; postgres = 0
        n = split(marks, parts, ";")
        for (i = 1; i <= n; i++) {
            p = trim(parts[i])
            if (p == "continues") continues = count - 1
            else if (p ~ /^continues [0-9]+$/) continues = substr(p, 11) + 0
            else if (p == "postgres") postgres = 1
            else if (p ~ /^compile-only:/) { sub(/^compile-only:[ \t]*/, "", p); compile = p }
            else if (p != "") { printf "%s: snippet %d: unknown mark \"%s\"\n", document, count, p > "/dev/stderr"; failed = 1; exit 1 }
        }
        marks = ""
        if (continues && !(continues in fn_of)) { printf "%s: snippet %d continues snippet %d, which is not before it\n", document, count, continues > "/dev/stderr"; failed = 1; exit 1 }
        if (!continues) { fns++; fn = fns; first[fn] = count; body[fn] = ""; lets[fn] = ""; reason[fn] = ""; pg[fn] = 0 }
        else { fn = fn_of[continues]; body[fn] = body[fn] "\n        // " document ", snippet " count " (continues snippet " continues ")\n" }
        fn_of[count] = fn
        parts_of[fn] = parts_of[fn] (parts_of[fn] == "" ? "" : ", ") count
        if (compile != "") reason[fn] = compile
        if (postgres) pg[fn] = 1
        hoisting = 0
        next
    }
    infence && /^[ \t]*```[ \t]*$/ { infence = 0; next }
    infence && /^[ \t]*```/ {
        printf "%s:%d: a fence inside snippet %d (a closing fence takes nothing after it)\n", document, NR, count > "/dev/stderr"; failed = 1; exit 1
    }
    infence {
        line = $0
        if (substr(line, 1, indent) ~ /^[ \t]*$/) line = substr(line, indent + 1)
        if (hoisting) { hoist = hoist line "\n"; if (line ~ /^}/) { hoisting = 0; hoist = hoist "\n" }; next }
        if (line ~ /^import [A-Za-z_]+[ \t]*$/) {
            module = trim(substr(line, 8))
            if (!(module in imported)) { imported[module] = 1; imports = imports "import " module "\n" }
            next
        }
        if (line ~ /^(@[A-Za-z]+ +)*((public|internal|private|fileprivate|final) +)*(extension|class|struct|enum|protocol|actor) /) {
            hoist = hoist "// " document ", snippet " count "\n" line "\n"
            if (line !~ /}[ \t]*$/) hoisting = 1; else hoist = hoist "\n"
            next
        }
        if (match(line, /^(let|var) [A-Za-z_][A-Za-z0-9_]*/)) {
            v = substr(line, 5, RLENGTH - 4)
            lets[fn] = lets[fn] "        _ = " v "\n"
        }
        if (line ~ /^[ \t]*$/) { if (body[fn] != "" && body[fn] !~ /\n\n$/) body[fn] = body[fn] "\n" }
        else body[fn] = body[fn] "        " (line ~ /^[ \t]*\/\// ? line : substitute(line)) "\n"
        next
    }
    END {
        if (failed) exit 1
        if (infence) { printf "%s: snippet %d has no closing fence\n", document, count > "/dev/stderr"; exit 1 }
        print "// Generated by Tests/DocSnippetTests/extract-snippets.sh from " document "."
        print "// Do not edit: change the document, then run the script again."
        printf "%s", imports
        print ""
        if (hoist != "") { print "// Declarations the snippets make at top level."; print ""; printf "%s", hoist }
        print "extension DocScene {"
        for (f = 1; f <= fns; f++) {
            print "    // MARK: " document ", snippet" (parts_of[f] ~ /,/ ? "s " : " ") parts_of[f]
            if (reason[f] != "") print "    // compile-only: " reason[f]
            print "    func " ident(name) "_" first[f] "() async throws {"
            printf "%s", body[f] lets[f]
            print "    }"
            if (f < fns) print ""
        }
        print "}"
        print ""
        print "extension DocSnippet {"
        print "    static let " ident(name) ": [DocSnippet] = ["
        for (f = 1; f <= fns; f++) {
            args = "\"" document "\", [" parts_of[f] "]"
            if (reason[f] == "" && body[f] ~ /^[ \t\n]*$/) reason[f] = "declarations only"
            if (reason[f] != "") print "        DocSnippet(" args ", compileOnly: \"" reason[f] "\"),"
            else print "        DocSnippet(" args (pg[f] ? ", postgres: true" : "") ") { try await $0." ident(name) "_" first[f] "() },"
        }
        print "    ]"
        print "}"
    }
    ' "$root/$document" > "$out/$name.swift.tmp"
    mv "$out/$name.swift.tmp" "$out/$name.swift"
done
