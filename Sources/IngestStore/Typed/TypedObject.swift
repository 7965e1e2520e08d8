public import Foundation

/// A typed view of one entity's managed objects, as `ingest codegen` generates them
/// (Xcode's "Create NSManagedObject Subclass"): `photo.title` is a `String?`,
/// `photo.whoTook` a `Photographer?`. It holds its `ManagedObject`, so it is confined to
/// the object's context as the object is (not Sendable); pass `objectID` between queues.
/// Dynamic access (`managedObject["title"]`) keeps working beside it.
public protocol TypedObject: Hashable, PredicateArgumentConvertible {
    /// The entity the type stands for.
    static var entityName: String { get }
    /// The managed object it shows.
    var managedObject: ManagedObject { get }
    /// The typed view of `object`, an object of `entityName` (or of one of its subentities).
    init(_ object: ManagedObject)

    // Core Data's lifecycle methods. Implement the ones needed in an extension of the
    // generated type (the generated file is rewritten), and register the type with
    // `coordinator.register(Photo.self)`: see `EntityLifecycle` for when each runs.
    // Without an implementation each does nothing.

    /// Once, when the object is inserted into a context: set initial values.
    func awakeFromInsert()
    /// When the object's values arrive from the store: what it sets is not a change.
    func awakeFromFetch()
    /// Before a save writes the object; it may change values, which the save writes.
    func willSave()
    /// After a save wrote the object.
    func didSave()
    /// When the object is deleted, before the delete rules apply.
    func prepareForDeletion()
    /// Before a save inserts the object. - Throws: an error that fails the save (`ObjectValidationError` names a property).
    func validateForInsert() throws
    /// Before a save writes the changed object. - Throws: an error that fails the save.
    func validateForUpdate() throws
    /// Before a save deletes the object. - Throws: an error that fails the save.
    func validateForDelete() throws
}

extension TypedObject {
    public func awakeFromInsert() {}
    public func awakeFromFetch() {}
    public func willSave() {}
    public func didSave() {}
    public func prepareForDeletion() {}
    public func validateForInsert() throws {}
    public func validateForUpdate() throws {}
    public func validateForDelete() throws {}
}

extension TypedObject {
    public var objectID: ObjectID { managedObject.objectID }

    public static func == (a: Self, b: Self) -> Bool { a.managedObject === b.managedObject }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(managedObject)) }

    /// A fetch request for this type's objects, whose results are of this type.
    public static func fetchRequest(predicate: QueryPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = [],
                                    fetchLimit: Int? = nil) -> TypedFetchRequest<Self> {
        TypedFetchRequest(FetchRequest(entityName, predicate: predicate, sortDescriptors: sortDescriptors, fetchLimit: fetchLimit))
    }
}

/// A fetch request whose results are `Result`s (`Photo.fetchRequest()`).
public struct TypedFetchRequest<Result: TypedObject>: Sendable {
    /// The untyped request, for what only it has (offsets, batches, prefetching).
    public var request: FetchRequest

    public init(_ request: FetchRequest) {
        guard request.entityName == Result.entityName else {
            fatalError("a TypedFetchRequest<\(Result.self)> fetches \(Result.entityName), not \(request.entityName)")
        }
        self.request = request
    }
}

extension ObjectContext {
    /// The objects `request` matches, typed.
    /// - Throws: as `fetch(_: FetchRequest)`.
    public func fetch<T: TypedObject>(_ request: TypedFetchRequest<T>) throws -> [T] {
        try fetch(request.request).map(T.init)
    }

    /// How many objects `request` matches.
    /// - Throws: as `count(for:)`.
    public func count<T: TypedObject>(for request: TypedFetchRequest<T>) throws -> Int {
        try count(for: request.request)
    }

    /// Inserts a new object of `type`'s entity.
    public func insert<T: TypedObject>(_ type: T.Type) -> T {
        T(insert(T.entityName))
    }

    /// The object with `id`, typed (a fault until its values are read).
    public func object<T: TypedObject>(with id: ObjectID, as type: T.Type) -> T {
        let object = object(with: id)
        guard object.isKind(ofEntity: T.entityName) else { fatalError("\(id) is not a \(T.entityName)") }
        return T(object)
    }
}

extension ManagedObject {
    /// An attribute's value as `T` (a generated property's getter); nil when it has none.
    public func typedValue<T: ValueConvertible>(_ key: String) -> T? {
        self[key].flatMap(T.init(value:))
    }

    /// Sets an attribute from `T` (a generated property's setter); nil removes the value.
    public func setTypedValue<T: ValueConvertible>(_ value: T?, _ key: String) {
        self[key] = value?.value
    }
}

extension Int16: ValueConvertible {
    public init?(value: Value) { guard case .int(let v) = value, let n = Int16(exactly: v) else { return nil }; self = n }
    public var value: Value { .int(Int64(self)) }
}

extension Int32: ValueConvertible {
    public init?(value: Value) { guard case .int(let v) = value, let n = Int32(exactly: v) else { return nil }; self = n }
    public var value: Value { .int(Int64(self)) }
}

extension Data: ValueConvertible {
    public init?(value: Value) { guard case .binary(let bytes) = value else { return nil }; self = Data(bytes) }
    public var value: Value { .binary(Array(self)) }
}

extension Decimal: ValueConvertible {
    public init?(value: Value) { guard case .decimal(let text) = value, let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }; self = number }
    public var value: Value { .decimal(NSDecimalNumber(decimal: self).description(withLocale: Locale(identifier: "en_US_POSIX"))) }
}
