import Foundation
import IngestJSON
import IngestStore

/// Maps a record's bytes straight into the rows of a `BatchInsertRequest`: one scan
/// finds every mapped value (`JSONCapturePlan`), and the common conversions (text,
/// integers, doubles, booleans, ISO 8601 dates) read those bytes in place. No JSON
/// tree, no `MappedObject`, no managed object is built, and strings without escapes
/// are never copied before SQLite copies them.
///
/// Anything else (a value that needs a conversion the fast path does not make, a
/// record the scan does not vouch for, a record that fails to map) goes through
/// `RecordMapper`, the reference: the rows are then built from its `MappedObject`, and
/// its errors are the reject reasons. So both paths give the same rows for every
/// record; a test holds them to it.
final class RowMapper {
    /// One object a record may hold: the record's own (instance 0) or a related one,
    /// reached from its parent through a to-one relationship. Pre-order: parents first.
    struct Instance {
        let plan: RecordMapper.EntityPlan
        let entity: Int
        let parent: Int
        /// The relationship's index among the parent's to-ones.
        let toOne: Int
        /// The capture slot of the relationship's value in the parent's object.
        let slot: Int
        /// Capture slots of the attributes, in `plan.attributes` order.
        let attributeSlots: [Int]
        /// Relationships past the nesting limit: a record that fills one is mapped the slow way.
        let cutSlots: [Int]
    }

    let mapper: RecordMapper
    let inserter: BatchInserter
    let capturePlan: JSONCapturePlan
    let instances: [Instance]
    private let captures: UnsafeMutableBufferPointer<JSONCapture>
    private var rowOf: [Int]
    /// Records that took the slow path (for tests and the profile).
    private(set) var slowRecords = 0

    /// Nested related objects deeper than this are mapped the slow way.
    static let maxDepth = 4

    /// A row mapper for `mapper`'s pipeline, or nil when the pipeline needs the object
    /// path: a to-many mapping, an entity the batch path cannot write, or a related
    /// entity found by something other than its one uniqueness constraint.
    init?(mapper: RecordMapper, inserter: BatchInserter) {
        let spec = mapper.spec
        for (name, mapping) in spec.mappings {
            guard let entity = spec.model.entity(name), inserter.entityIndex(name) != nil else { return nil }
            let constraint = entity.uniquenessConstraints.first ?? []
            if name != spec.recordEntity || !mapping.key.isEmpty, mapping.key != constraint { return nil }
            for relationship in mapping.relationships where entity.relationship(relationship.relationship)!.isToMany { return nil }
        }
        for (name, mapping) in spec.mappings where !mapping.relationships.isEmpty || name != spec.recordEntity {
            if name != spec.recordEntity, mapping.key.count != 1 { return nil }
        }
        var capturePlan = JSONCapturePlan()
        var instances: [Instance] = []
        func add(_ plan: RecordMapper.EntityPlan, node: Int, parent: Int, toOne: Int, slot: Int, depth: Int) {
            let entity = inserter.entityIndex(plan.entity)!
            let attributeSlots = plan.attributes.map { capturePlan.slot(at: $0.mapping.from, from: node) }
            let cut = depth + 1 >= Self.maxDepth ? plan.relationships.map { capturePlan.slot(at: $0.from, from: node) } : []
            let me = instances.count
            instances.append(Instance(plan: plan, entity: entity, parent: parent, toOne: toOne, slot: slot,
                                      attributeSlots: attributeSlots, cutSlots: cut))
            guard cut.isEmpty else { return }
            for relationship in plan.relationships {
                let slot = capturePlan.slot(at: relationship.from, from: node)
                let child = capturePlan.node(at: relationship.from, from: node)
                add(mapper.plans[relationship.destination]!, node: child, parent: me,
                    toOne: inserter.toOneIndex(relationship.name, of: entity)!, slot: slot, depth: depth + 1)
            }
        }
        add(mapper.recordPlan, node: JSONCapturePlan.root, parent: -1, toOne: -1, slot: -1, depth: 0)
        self.mapper = mapper
        self.inserter = inserter
        self.capturePlan = capturePlan
        self.instances = instances
        captures = .allocate(capacity: max(1, capturePlan.slotCount))
        rowOf = Array(repeating: -1, count: instances.count)
    }

    deinit { captures.deallocate() }

    /// Adds the rows of the record at `range` of `request.text`.
    /// - Throws: `CoercionError` or `FeedError`: the record is rejected for that reason.
    func add(record range: Range<Int>, number: Int, to request: inout BatchInsertRequest) throws {
        request.beginRecord(number: number)
        let mapped = request.text.withUnsafeBytes { text in
            addFast(UnsafeRawBufferPointer(rebasing: text[range]), offset: range.lowerBound, to: &request)
        }
        guard !mapped else { return }
        request.abandonRecord()
        slowRecords += 1
        let object = try request.text.withUnsafeBytes { text in
            try mapper.map(JSONValue.parse(UnsafeRawBufferPointer(rebasing: text[range]), keeping: mapper.selection))
        }
        request.beginRecord(number: number)
        _ = addRows(object, mode: .upsert, to: &request)
    }

    /// The rows of a record mapped by `RecordMapper`.
    private func addRows(_ object: MappedObject, mode: BatchInsertRequest.Mode, to request: inout BatchInsertRequest) -> Int {
        let entity = inserter.entityIndex(object.entity)!
        let row = request.addRow(entity: entity, mode: mode)
        for (position, value) in zip(object.positions, object.slots) { request.set(value, row: row, attribute: position) }
        for (relationship, targets) in object.relations {
            for target in targets {
                let child = addRows(target, mode: .findOrCreate, to: &request)
                request.link(row: row, toOne: inserter.toOneIndex(relationship, of: entity)!, to: child)
            }
        }
        return row
    }

    /// The fast path: false hands the record to the slow path (which decides errors).
    private func addFast(_ record: UnsafeRawBufferPointer, offset: Int, to request: inout BatchInsertRequest) -> Bool {
        guard capturePlan.capture(record, into: captures) else { return false }
        for (index, instance) in instances.enumerated() {
            rowOf[index] = -1
            var keyOnly: JSONCapture?
            if instance.parent >= 0 {
                guard rowOf[instance.parent] >= 0 else { continue }
                let capture = captures[instance.slot]
                switch capture.kind {
                case .absent, .null: continue
                case .object: break
                case .array: return false
                default: keyOnly = capture
                }
            }
            let row = request.addRow(entity: instance.entity, mode: instance.parent < 0 ? .upsert : .findOrCreate)
            rowOf[index] = row
            if instance.parent >= 0 { request.link(row: rowOf[instance.parent], toOne: instance.toOne, to: row) }
            let plan = instance.plan
            if let keyOnly {
                guard plan.key.count == 1, let json = Self.json(keyOnly, record),
                      let value = try? ValueCoercion.value(json, for: plan.keyAttributes[0].type) else { return false }
                request.set(value, row: row, attribute: plan.keyAttributes[0].position)
                continue
            }
            for (attribute, slot) in zip(plan.attributes, instance.attributeSlots) {
                guard setCell(captures[slot], attribute, record, offset: offset, row: row, in: &request) else { return false }
            }
            for keySlot in plan.keySlots {
                guard let keySlot, captures[instance.attributeSlots[keySlot]].kind != .absent,
                      captures[instance.attributeSlots[keySlot]].kind != .null else { return false }
            }
            for slot in instance.cutSlots where captures[slot].kind != .absent && captures[slot].kind != .null { return false }
        }
        return true
    }

    /// Sets one attribute's cell from its captured bytes; false when the value needs the slow path.
    private func setCell(_ capture: JSONCapture, _ attribute: RecordMapper.AttributePlan, _ record: UnsafeRawBufferPointer,
                         offset: Int, row: Int, in request: inout BatchInsertRequest) -> Bool {
        let position = attribute.position
        let bytes = UnsafeRawBufferPointer(rebasing: record[Int(capture.start)..<Int(capture.end)])
        func set(_ cell: BatchInsertRequest.Cell) -> Bool {
            request.set(cell, row: row, attribute: position)
            return true
        }
        if capture.kind == .absent || capture.kind == .null {
            guard let value = attribute.mapping.defaultValue else { return !attribute.required && set(.null) }
            request.set(value, row: row, attribute: position)
            return true
        }
        if !attribute.mapping.asJSON {
            switch (attribute.type, capture.kind) {
            case (.string, .string), (.string, .number), (.string, .trueValue), (.string, .falseValue):
                return set(.text(offset: Int32(offset) + capture.start, count: capture.end - capture.start))
            case (.int64, .number), (.int64, .string):
                if let number = Self.integer(bytes) { return set(.int(number)) }
            case (.double, .number):
                if let number = Double(String(decoding: bytes, as: UTF8.self)), number.isFinite { return set(.double(number)) }
            case (.bool, .trueValue): return set(.int(1))
            case (.bool, .falseValue): return set(.int(0))
            case (.date, .string):
                if attribute.mapping.dates.first == .iso8601, let date = ValueCoercion.fastISO8601(bytes) {
                    return set(.double(date.timeIntervalSinceReferenceDate))
                }
            default:
                break
            }
        }
        // Everything else converts as the slow path does, from the value itself.
        guard let json = Self.json(capture, record) else { return false }
        var value: Value?
        if attribute.mapping.asJSON, json != .null {
            value = .string(json.description)
        } else {
            guard let converted = try? ValueCoercion.value(json, for: attribute.type, dates: attribute.mapping.dates) else { return false }
            value = converted
        }
        if value == nil { value = attribute.mapping.defaultValue }
        if value == nil && attribute.required { return false }
        request.set(value, row: row, attribute: position)
        return true
    }

    /// The captured value as a JSON value.
    private static func json(_ capture: JSONCapture, _ record: UnsafeRawBufferPointer) -> JSONValue? {
        let bytes = UnsafeRawBufferPointer(rebasing: record[Int(capture.start)..<Int(capture.end)])
        switch capture.kind {
        case .absent: return nil
        case .null: return .null
        case .trueValue: return .bool(true)
        case .falseValue: return .bool(false)
        case .number: return .number(String(decoding: bytes, as: UTF8.self))
        case .string: return .string(String(decoding: bytes, as: UTF8.self))
        case .escapedString, .object, .array:
            return try? JSONValue.parse(UnsafeRawBufferPointer(rebasing: record[capture.jsonRange]))
        }
    }

    /// `-?[0-9]{1,18}` as an Int64, or nil (longer or other forms go the slow way).
    private static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index = 1 }
        guard bytes.count > index, bytes.count - index <= 18 else { return nil }
        var value: Int64 = 0
        while index < bytes.count {
            let digit = Int64(bytes[index]) &- 48
            guard digit >= 0 && digit <= 9 else { return nil }
            value = value &* 10 &+ digit
            index += 1
        }
        return negative ? -value : value
    }
}
