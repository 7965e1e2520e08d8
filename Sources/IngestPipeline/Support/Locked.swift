import Synchronization

/// A value behind a `Mutex`, shared by reference: closures made before their owner exists
/// (a run's split callbacks, its main context's merge handler) and the owner hold the same one.
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: Value) { mutex = Mutex(value) }

    package func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        try mutex.withLock(body)
    }
}
