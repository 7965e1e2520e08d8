import Foundation

/// The long form of the heaviest tests: `INGEST_STRESS=1 ./run.sh test` runs every case and
/// every round of them, and the long multi-process tests that the quick run skips; without
/// it `./run.sh test` runs a part of each, chosen to cover every behaviour once. CI
/// (`.ci/run`) sets it.
public enum Stress {
    /// Whether `INGEST_STRESS` is set (to anything but 0 or an empty string).
    public static let isOn: Bool = {
        let value = ProcessInfo.processInfo.environment["INGEST_STRESS"] ?? ""
        return !value.isEmpty && value != "0"
    }()

    /// Why a test that runs only under `INGEST_STRESS` was skipped (Swift Testing prints it).
    public static let reason = "a long multi-process test: INGEST_STRESS=1 ./run.sh test runs it (CI does)"

    /// `all` under `INGEST_STRESS`, else `quick`.
    public static func pick<T>(_ all: [T], quick: [T]) -> [T] { isOn ? all : quick }

    /// `all` under `INGEST_STRESS`, else `quick`.
    public static func count(_ all: Int, quick: Int) -> Int { isOn ? all : quick }
}
