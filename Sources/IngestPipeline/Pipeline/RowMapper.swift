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

    /// How the fast path converts one attribute, with nothing to retain.
    struct Field {
        /// `jsonText`: a `"json": true` string attribute, kept as its value's compact text.
        enum Kind: UInt8 { case string, int64, double, bool, isoDate, jsonText, other }
        var kind: Kind
        var slot: Int32
        var position: Int32
        var required: Bool
        var hasDefault: Bool
        /// A constant, a table, trim or case: converted the general way.
        var transformed: Bool
        /// Index of the instance, and of the attribute in its plan (for the rare paths).
        var instance: Int32
        var attribute: Int32
    }

    /// An instance as the fast path reads it: plain numbers only.
    struct Step {
        var entity: Int32
        var parent: Int32
        var toOne: Int32
        var slot: Int32
        var fields: Range<Int32>
        var keySlots: Range<Int32>
        var cutSlots: Range<Int32>
    }

    let mapper: RecordMapper
    let inserter: any BatchRequestMaking
    /// Learns the members the pipeline does not map, as `members` meets them.
    /// The capture plan, behind a pointer: read in place for every record (a stored `var`
    /// would be copied, its arrays retained, for each scan), changed only while
    /// `members` learns a member, on the same thread.
    private let plan: UnsafeMutablePointer<JSONCapturePlan>
    var capturePlan: JSONCapturePlan { plan.pointee }
    /// The members records hold that the pipeline does not map.
    let members = MemberCounter()
    let instances: [Instance]
    private let captures: UnsafeMutableBufferPointer<JSONCapture>
    /// Per instance, the row it became in the current record (-1: none).
    private let rowOf: UnsafeMutableBufferPointer<Int>
    /// The fast path's cells of the row being mapped, handed to the request in one call.
    private let pending: UnsafeMutableBufferPointer<BatchInsertRequest.Assignment>
    @exclusivity(unchecked) private var pendingCount = 0
    private let steps: UnsafeMutableBufferPointer<Step>
    private let fields: UnsafeMutableBufferPointer<Field>
    /// Capture slots: the instances' key attributes, then their cut relationships.
    private let slotLists: UnsafeMutableBufferPointer<Int32>
    /// The run whose rows this mapper makes, when the pipeline records lineage
    /// (`PipelineSpec.lineage`): each request then carries the run and its chunk.
    var lineageRun: Int?
    /// Records that took the slow path (for tests and the profile).
    private(set) var slowRecords = 0
    /// Records captured by their member ends, without a scan (`JSONCapturePlan.EndsCapture.stepped`).
    private(set) var steppedRecords = 0

    /// Nested related objects deeper than this are mapped the slow way.
    static let maxDepth = 4

    /// A row mapper for `mapper`'s pipeline, or nil when the pipeline needs the object
    /// path: a to-many mapping, an entity the batch path cannot write, or a related
    /// entity found by something other than its one uniqueness constraint.
    @_optimize(none)
    init?(mapper: RecordMapper, inserter: any BatchRequestMaking) {
        let spec = mapper.spec
        // Records of several entities: the object path maps each by its own.
        guard spec.discriminator == nil else { return nil }
        for (name, mapping) in spec.mappings {
            // `entityIndex` is nil for what the batch path does not write (`BatchEntityPlan.supports`:
            // an entity of a hierarchy, say), which the object path then writes.
            guard let entity = spec.model.entity(name), inserter.entityIndex(name) != nil else { return nil }
            let constraint = entity.uniquenessConstraints.first ?? []
            if name != spec.recordEntity || !mapping.key.isEmpty, mapping.key != constraint { return nil }
            for relationship in mapping.relationships where entity.relationship(relationship.relationship)!.isToMany { return nil }
            for relationship in mapping.relationships where relationship.from.rest != nil { return nil }
            // An object made of its parent's members is mapped by `RecordMapper` (the object path).
            for relationship in mapping.relationships where relationship.fields != nil { return nil }
            // A path that starts with an array index never matches an object record: the object path says so.
            if mapping.attributes.contains(where: { $0.from.keyPrefix.isEmpty }) { return nil }
        }
        for (name, mapping) in spec.mappings where !mapping.relationships.isEmpty || name != spec.recordEntity {
            if name != spec.recordEntity, mapping.key.count != 1 { return nil }
        }
        var capturePlan = JSONCapturePlan()
        var instances: [Instance] = []
        func add(_ plan: RecordMapper.EntityPlan, node: Int, parent: Int, toOne: Int, slot: Int, depth: Int) {
            let entity = inserter.entityIndex(plan.entity)!
            // A path through an array captures the array; the rest of the path is read from it.
            let attributeSlots = plan.attributes.map { capturePlan.slot(at: $0.mapping.from.keyPrefix, from: node) }
            let cut = depth + 1 >= Self.maxDepth ? plan.relationships.map { capturePlan.slot(at: $0.from.keyPrefix, from: node) } : []
            let me = instances.count
            instances.append(Instance(plan: plan, entity: entity, parent: parent, toOne: toOne, slot: slot,
                                      attributeSlots: attributeSlots, cutSlots: cut))
            guard cut.isEmpty else { return }
            for relationship in plan.relationships {
                let slot = capturePlan.slot(at: relationship.from.keyPrefix, from: node)
                let child = capturePlan.node(at: relationship.from.keyPrefix, from: node)
                add(mapper.plans[relationship.destination]!, node: child, parent: me,
                    toOne: inserter.toOneIndex(relationship.name, of: entity)!, slot: slot, depth: depth + 1)
            }
        }
        add(mapper.recordPlan, node: JSONCapturePlan.root, parent: -1, toOne: -1, slot: -1, depth: 0)
        capturePlan.read([rowErrorKey])
        self.mapper = mapper
        self.inserter = inserter
        plan = .allocate(capacity: 1)
        plan.initialize(to: capturePlan)
        self.instances = instances
        captures = .allocate(capacity: max(1, capturePlan.slotCount))
        rowOf = .allocate(capacity: instances.count)
        rowOf.initialize(repeating: -1)
        var steps: [Step] = []
        var fields: [Field] = []
        var lists: [Int32] = []
        for (index, instance) in instances.enumerated() {
            let firstField = Int32(fields.count)
            for (number, (attribute, slot)) in zip(instance.plan.attributes, instance.attributeSlots).enumerated() {
                let kind: Field.Kind = switch attribute.type {
                case _ where attribute.mapping.from.rest != nil: .other
                case _ where attribute.mapping.asJSON: .jsonText
                case .string: .string
                case .int64: .int64
                case .double: .double
                case .bool: .bool
                case .date where attribute.mapping.dates.first == .iso8601 && attribute.mapping.timeZone == nil: .isoDate
                default: .other
                }
                fields.append(Field(kind: kind, slot: Int32(slot), position: Int32(attribute.position), required: attribute.required,
                                    hasDefault: attribute.mapping.defaultValue != nil, transformed: !attribute.mapping.transform.isIdentity,
                                    instance: Int32(index), attribute: Int32(number)))
            }
            let firstKey = Int32(lists.count)
            for keySlot in instance.plan.keySlots {
                // A key not mapped as an attribute is never in the record: the slow path says so.
                lists.append(keySlot.map { Int32(instance.attributeSlots[$0]) } ?? -1)
            }
            let firstCut = Int32(lists.count)
            lists += instance.cutSlots.map(Int32.init)
            steps.append(Step(entity: Int32(instance.entity), parent: Int32(instance.parent), toOne: Int32(instance.toOne),
                              slot: Int32(instance.slot), fields: firstField..<Int32(fields.count),
                              keySlots: firstKey..<firstCut, cutSlots: firstCut..<Int32(lists.count)))
        }
        self.steps = .allocate(capacity: steps.count)
        _ = self.steps.initialize(from: steps)
        self.fields = .allocate(capacity: max(1, fields.count))
        pending = .allocate(capacity: max(1, fields.count))
        _ = self.fields.initialize(from: fields)
        slotLists = .allocate(capacity: max(1, lists.count))
        _ = slotLists.initialize(from: lists)
    }

    deinit {
        plan.deinitialize(count: 1)
        plan.deallocate()
        captures.deallocate()
        rowOf.deallocate()
        steps.deallocate()
        fields.deallocate()
        pending.deallocate()
        slotLists.deallocate()
    }

    /// Adds the rows of the record at `range` of `request.text`, stepping over its members
    /// by `memberEnds` when the split handed them on (`MemberEnds`).
    /// - Throws: `CoercionError` or `FeedError`: the record is rejected for that reason.
    /// Its members the pipeline does not map are counted in `members`.
    func add(record range: Range<Int>, number: Int, memberEnds: RecordEnds? = nil,
             to request: inout BatchInsertRequest) throws {
        request.beginRecord(number: number)
        // Text cells point into the chunk by 32-bit offsets: a record past 2 GiB into a chunk
        // (records of hundreds of KB, thousands to a chunk) has its values copied instead.
        let mapped = range.upperBound <= Int(Int32.max) && request.text.withUnsafeBytes { text in
            let record = UnsafeRawBufferPointer(rebasing: text[range])
            // A row the splitter marked as not fitting its header is rejected the slow way.
            guard !Self.isRowError(record) else { return false }
            // Records reach the mapper from chunks, whose bytes the splitter checked.
            var captured: Bool
            if let memberEnds {
                let outcome = plan.pointee.capture(record, memberEnds: memberEnds, into: captures, log: members.log)
                if outcome == .stepped { steppedRecords += 1 }
                captured = outcome != .refused
            } else {
                captured = plan.pointee.capture(record, into: captures, log: members.log, splitterChecked: true)
            }
            guard captured else {
                members.count(parsing: record, plan: &plan.pointee)
                return false
            }
            if !members.countKnown() { members.count(scanned: record, plan: &plan.pointee) }
            return addFast(record, offset: range.lowerBound, to: &request)
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
        for index in object.slots.indices {
            request.set(object.slots[index], row: row, attribute: object.positions[index], given: object.given[index])
        }
        for (relationship, targets) in object.relations {
            for target in targets {
                // An object given by its key alone is found or made; one given whole is written by its rule.
                let child = addRows(target, mode: target.byKeyAlone ? .findOrCreate : .upsert, to: &request)
                request.link(row: row, toOne: inserter.toOneIndex(relationship, of: entity)!, to: child)
            }
        }
        return row
    }

    /// The fast path, after the capture scan: false hands the record to the slow path (which decides errors).
    private func addFast(_ record: UnsafeRawBufferPointer, offset: Int, to request: inout BatchInsertRequest) -> Bool {
        for index in steps.indices {
            let step = steps[index]
            rowOf[index] = -1
            var keyOnly: JSONCapture?
            if step.parent >= 0 {
                guard rowOf[Int(step.parent)] >= 0 else { continue }
                let capture = captures[Int(step.slot)]
                switch capture.kind {
                case .absent, .null: continue
                case .object: break
                case .array: return false
                default: keyOnly = capture
                }
            }
            let row = request.addRow(entity: Int(step.entity), mode: keyOnly == nil ? .upsert : .findOrCreate)
            rowOf[index] = row
            if step.parent >= 0 { request.link(row: rowOf[Int(step.parent)], toOne: Int(step.toOne), to: row) }
            if let keyOnly {
                let plan = instances[index].plan
                guard plan.key.count == 1, let json = Self.json(keyOnly, record),
                      let value = try? ValueCoercion.value(json, for: plan.keyAttributes[0].type) else { return false }
                request.set(value, row: row, attribute: plan.keyAttributes[0].position)
                continue
            }
            pendingCount = 0
            for field in step.fields {
                guard setCell(fields[Int(field)], record, offset: offset, row: row, in: &request) else { return false }
            }
            request.set(row: row, UnsafeBufferPointer(rebasing: pending[0..<pendingCount]))
            for keySlot in step.keySlots {
                let slot = slotLists[Int(keySlot)]
                guard slot >= 0, captures[Int(slot)].kind != .absent, captures[Int(slot)].kind != .null else { return false }
            }
            for cut in step.cutSlots {
                let kind = captures[Int(slotLists[Int(cut)])].kind
                if kind != .absent && kind != .null { return false }
            }
        }
        return true
    }

    /// Sets one attribute's cell from its captured bytes; false when the value needs the slow path.
    @inline(__always)
    private func setCell(_ field: Field, _ record: UnsafeRawBufferPointer, offset: Int, row: Int,
                         in request: inout BatchInsertRequest) -> Bool {
        let capture = captures[Int(field.slot)]
        let position = Int(field.position)
        if field.transformed {
            return setConverted(capture, instances[Int(field.instance)].plan.attributes[Int(field.attribute)], record, row: row, in: &request)
        }
        switch (field.kind, capture.kind) {
        case (_, .absent), (_, .null):
            if !field.hasDefault && !field.required {
                add(.null, position: position, given: capture.kind == .null)
                return true
            }
        case (.string, .string), (.string, .number), (.string, .trueValue), (.string, .falseValue):
            add(.text(offset: Int32(offset) + capture.start, count: capture.end - capture.start), position: position)
            return true
        case (.int64, .number), (.int64, .string):
            if let number = NumberText.int64(UnsafeRawBufferPointer(rebasing: record[Int(capture.start)..<Int(capture.end)])) {
                add(.int(number), position: position)
                return true
            }
        case (.double, .number):
            let bytes = UnsafeRawBufferPointer(rebasing: record[Int(capture.start)..<Int(capture.end)])
            if let number = NumberText.double(bytes) ?? Double(String(decoding: bytes, as: UTF8.self)), number.isFinite {
                add(.double(number), position: position)
                return true
            }
        case (.bool, .trueValue), (.bool, .falseValue):
            add(.int(capture.kind == .trueValue ? 1 : 0), position: position)
            return true
        case (.jsonText, .object), (.jsonText, .array):
            // Already compact in the record (as the split writes records): the record's own bytes.
            let range = capture.jsonRange
            if JSONText.compactLength(UnsafeRawBufferPointer(rebasing: record[range])) == range.count {
                add(.text(offset: Int32(offset + range.lowerBound), count: Int32(range.count)), position: position)
                return true
            }
        case (.isoDate, .string):
            if let seconds = ISO8601.referenceSeconds(UnsafeRawBufferPointer(rebasing: record[Int(capture.start)..<Int(capture.end)])),
               StoredDate.contains(Date(timeIntervalSinceReferenceDate: seconds)) {
                add(.double(seconds), position: position)
                return true
            }
        default:
            break
        }
        return setConverted(capture, instances[Int(field.instance)].plan.attributes[Int(field.attribute)], record, row: row, in: &request)
    }

    /// A cell of the fast path's row, set with the row's others (`pending`).
    @inline(__always)
    private func add(_ cell: BatchInsertRequest.Cell, position: Int, given: Bool = true) {
        pending[pendingCount] = BatchInsertRequest.Assignment(cell, position: position, given: given)
        pendingCount += 1
    }

    /// Everything the fast cases do not cover converts as the slow path does, from the value itself.
    private func setConverted(_ capture: JSONCapture, _ attribute: RecordMapper.AttributePlan, _ record: UnsafeRawBufferPointer,
                              row: Int, in request: inout BatchInsertRequest) -> Bool {
        var value: Value?
        var json = Self.json(capture, record)
        if json == nil && capture.kind != .absent { return false }
        if let rest = attribute.rest, let whole = json { json = rest.value(in: whole) }
        let transform = attribute.mapping.transform
        if let constant = transform.constant {
            json = constant
        } else if !transform.isIdentity {
            guard let transformed = try? transform.apply(json) else { return false }
            json = transformed
        }
        if let json {
            if attribute.mapping.asJSON, json != .null {
                value = .string(json.description)
            } else {
                guard let converted = try? ValueCoercion.value(json, for: attribute.type, dates: attribute.mapping.dates,
                                                               timeZone: attribute.mapping.timeZone) else { return false }
                value = converted
            }
        }
        if value == nil { value = attribute.mapping.defaultValue }
        if value == nil && attribute.required { return false }
        request.set(value, row: row, attribute: attribute.position, given: json != nil)
        return true
    }

    private static let rowErrorPrefix = Array("{\"\(rowErrorKey)\"".utf8)

    private static func isRowError(_ record: UnsafeRawBufferPointer) -> Bool {
        record.count > rowErrorPrefix.count && record.prefix(rowErrorPrefix.count).elementsEqual(rowErrorPrefix)
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
        case .escapedString:
            // Nil (a form only the full parser judges) sends the record the slow way.
            return JSONText.unescaped(bytes).map(JSONValue.string)
        case .object, .array:
            return try? JSONValue.parse(UnsafeRawBufferPointer(rebasing: record[capture.jsonRange]))
        }
    }
}
