/// An object's attribute values, in memory the object owns outright.
///
/// An array would do, but every object would then pay for a generic array allocation
/// (with a metadata lookup), uniqueness checks on each write and a copy-on-write
/// check on each set; an insert-heavy import makes millions of objects.
struct ValueSlots {
    private let storage: UnsafeMutableBufferPointer<Value?>

    init(count: Int, defaults: [Value?]?) {
        storage = .allocate(capacity: count)
        if let defaults {
            _ = storage.initialize(from: defaults)
        } else {
            storage.initialize(repeating: nil)
        }
    }

    /// Destroys the values and frees the memory; the owner calls it once, in deinit.
    func free() {
        storage.deinitialize().deallocate()
    }

    var count: Int { storage.count }

    subscript(index: Int) -> Value? {
        get { storage[index] }
        nonmutating set { storage[index] = newValue }
    }

    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Value?>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(storage))
    }

    var array: [Value?] { Array(storage) }

    func clear() {
        for index in storage.indices { storage[index] = nil }
    }
}
