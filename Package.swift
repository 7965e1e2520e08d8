// swift-tools-version: 6.0
import PackageDescription

// `./run.sh test` sets INGEST_OPTIMIZED_TESTS=1: its debug build then optimises IngestJSON,
// the parser the tests drive for hundreds of thousands of records (the quick suite's CPU:
// 357 s → 291 s; the debug build: 297 s → 299 s on a fresh clone). IngestPipeline as well
// saved 33 s more of the tests' CPU but made that build 91 s longer (367 s against 276 s).
// Only when set: unsafe flags would make the library products unusable as dependencies.
let testBuildOptimizesTheHotPath: [SwiftSetting] =
    Context.environment["INGEST_OPTIMIZED_TESTS"] == "1" ? [.unsafeFlags(["-O"], .when(configuration: .debug))] : []

// DocC's command plugin, only for `./run.sh docs` (which sets INGEST_DOCS=1): `swift build
// --build-tests` compiles every plugin of the package graph before any module, and
// swift-docc-plugin's two took about 4 s of a fresh clone's test build, alone on the cores.
let documentationPlugin: [Package.Dependency] =
    Context.environment["INGEST_DOCS"] == "1" ? [.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")] : []

let package = Package(
    name: "Ingest",
    // Linux only: no Apple platform is declared (each library says so with #error elsewhere).
    products: [
        .executable(name: "ingest", targets: ["ingest"]),
        .library(name: "IngestJSON", targets: ["IngestJSON"]),
        .library(name: "IngestStore", targets: ["IngestStore"]),
        .library(name: "IngestPipeline", targets: ["IngestPipeline"]),
        .library(name: "IngestService", targets: ["IngestService"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ] + documentationPlugin,
    targets: [
        .systemLibrary(
            name: "CYajl",
            pkgConfig: "yajl",
            providers: [.apt(["libyajl-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // SQLite through its C API, the system's libsqlite3 (see IngestStore below).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // PostgreSQL runs keep their chunks in the database zstd-compressed (a sixth of their size).
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // Feeds over HTTP(S): the system's libcurl, not an HTTP stack built with the package.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(
            name: "IngestJSON",
            dependencies: [
                "CYajl",
                "CZlib",
                "CCurl",
            ],
            swiftSettings: testBuildOptimizesTheHotPath
        ),
        .target(
            name: "IngestStore",
            // SQLite through its C API and a connection layer of its own, not GRDB, which
            // compiled alone for 100 s on the release build's critical path (Performance.md,
            // "The build").
            dependencies: [
                "CSQLite",
                "CLibPQ",
            ]
        ),
        .target(
            name: "IngestPipeline",
            dependencies: ["IngestJSON", "IngestStore", "CZstd", .product(name: "Logging", package: "swift-log"),
                           .product(name: "CoreMetrics", package: "swift-metrics")]
        ),
        // An import as a swift-service-lifecycle service; the `ingest` command does not need it.
        .target(
            name: "IngestService",
            dependencies: ["IngestPipeline", "IngestStore",
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
        .executableTarget(
            name: "ingest",
            dependencies: [
                "IngestJSON",
                "IngestStore",
                "IngestPipeline",
                "CSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The command line is cold code (the import's hot path is in the libraries), and
            // its module compiles last, alone, on the build's critical path: unoptimised, a
            // cold release build is about 35 s shorter (Performance, "The build").
            swiftSettings: [.unsafeFlags(["-Onone"])]
        ),
        // Helpers the test targets share: temporary directories, running the built binary,
        // looking into a SQLite store from outside.
        .target(
            name: "IngestTestSupport",
            dependencies: ["CSQLite", "IngestJSON"],
            path: "Tests/IngestTestSupport"
        ),
        .testTarget(
            name: "IngestJSONTests",
            dependencies: ["IngestJSON", "IngestTestSupport"]
        ),
        .testTarget(
            name: "IngestPipelineTests",
            dependencies: ["IngestPipeline", "IngestJSON", "IngestStore", "IngestTestSupport"]
        ),
        .testTarget(
            name: "IngestServiceTests",
            dependencies: ["IngestService", "IngestPipeline", "IngestStore", "IngestJSON", "IngestTestSupport",
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "CoreMetrics", package: "swift-metrics"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        // Uses typed classes `ingest codegen` generated (Models.swift, from Fixtures/models/albums.json).
        .testTarget(
            name: "GeneratedModelTests",
            dependencies: ["IngestStore", "IngestTestSupport"]
        ),
        .testTarget(
            name: "IngestStoreTests",
            dependencies: ["IngestStore", "IngestTestSupport"]
        ),
        // Every Swift snippet of the README and the DocC catalogs, compiled and run
        // (Snippets/ is generated from the documents by extract-snippets.sh).
        .testTarget(
            name: "DocSnippetTests",
            dependencies: ["IngestStore", "IngestPipeline", "IngestService", "IngestTestSupport",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "UnixSignals", package: "swift-service-lifecycle")],
            exclude: ["extract-snippets.sh", "cli-reference.py", "DocModel.json"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
