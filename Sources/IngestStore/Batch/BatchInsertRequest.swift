import Foundation

/// Rows to write in one transaction by a `BatchInserter`, the store's bulk path,
/// modeled on Core Data's `NSBatchInsertRequest`: no managed objects, no change
/// tracking, rows bound straight to cached statements. A record becomes a group of
/// rows: its own row and the rows of the related objects it names, linked by to-one
/// relationships.
///
/// Each row holds a cell for every attribute of its entity (starting at the model's
/// defaults) and a link for every to-one relationship. Text cells may point into
/// `text`, the bytes the rows were read from, so a value is never copied before
/// SQLite copies it.
package struct BatchInsertRequest: Sendable {
    /// One attribute's value in a row.
    package enum Cell: Sendable, Equatable {
        case null
        case int(Int64)
        case double(Double)
        /// UTF-8 text at `offset..<offset+count` in the request's `text`.
        case text(offset: Int32, count: Int32)
        /// A value kept in the request (`values[index]`).
        case value(Int32)
    }

    /// How a row meets a stored row with the same key (the entity's uniqueness constraint).
    package enum Mode: Sendable {
        /// An object the record describes (its own, or a nested one): a stored row with
        /// its key is written by the entity's `ConflictRule`, from the cells set with
        /// `given` true.
        case upsert
        /// A related object named by its key alone: a stored row with its key is used as
        /// it is; otherwise this row is inserted.
        case findOrCreate
    }

    struct Row: Sendable {
        var entity: Int
        var mode: Mode
        var firstCell: Int
        var firstLink: Int
        var firstMask: Int
    }

    struct Record: Sendable {
        /// Caller's number for the record (its index in the chunk, say).
        var number: Int
        var firstRow: Int
        /// A value of the wrong type given for one of its rows, as a reason.
        var invalid: String?
    }

    package var text: [UInt8]
    private(set) var values: [Value] = []
    private(set) var cells: [Cell] = []
    /// Per row and to-one relationship: the linked row, or -1.
    private(set) var links: [Int32] = []
    /// Per row: bit i set when the record gives attribute i (then to-one i - attributes).
    private(set) var masks: [UInt64] = []
    private(set) var rows: [Row] = []
    private(set) var records: [Record] = []
    let entities: [BatchEntityPlan]
    /// Whether any entity of the request keeps stored objects as they are (`keepExisting`):
    /// only then can a record have rows that nothing would link (worked out once, not per record).
    let keepsStoredObjects: Bool
    /// Per entity, what `addRow(entity:mode:)` and `problem(in:keys:skipping:existing:)`
    /// read for every row, in plain values (see `BatchEntityShape`), with where its default
    /// cells and required positions are in `defaultCells` and `requiredPositions`, which hold
    /// every entity's one after another.
    private(set) var shapes: [RowShape] = []
    private let defaultCells: [Cell]
    let requiredPositions: [Int]

    struct RowShape {
        let entity: BatchEntityShape
        let defaults: Range<Int>
        let required: Range<Int>
        /// Whether `defaultValues` has any for the entity.
        var hasDefaultValues = false
    }
    /// Per entity: model defaults that are not plain cells (strings, say), by position.
    var defaultValues: [[(position: Int, value: Value)]] = []
    /// The run and chunk the records come from: each row of an entity with lineage
    /// attributes gets them, and its record's number, as it is added. Nil: none set.
    package var lineage: (run: Int64, chunk: Int64)?

    /// How much a request holds: a mapper reserves as much in the next one
    /// (`reserveCapacity(_:)`), since a chunk's batches are alike and an array grown by
    /// doubling copies itself each time.
    package struct Capacity: Sendable {
        var values = 0, cells = 0, links = 0, masks = 0, rows = 0, records = 0

        /// Nothing reserved.
        package init() {}

        init(values: Int, cells: Int, links: Int, masks: Int, rows: Int, records: Int) {
            (self.values, self.cells, self.links, self.masks, self.rows, self.records) = (values, cells, links, masks, rows, records)
        }
    }

    /// What this request holds, as a capacity for the next.
    package var capacity: Capacity {
        Capacity(values: values.count, cells: cells.count, links: links.count, masks: masks.count, rows: rows.count,
                 records: records.count)
    }

    /// Makes room for `capacity` without growing.
    package mutating func reserveCapacity(_ capacity: Capacity) {
        values.reserveCapacity(capacity.values)
        cells.reserveCapacity(capacity.cells)
        links.reserveCapacity(capacity.links)
        masks.reserveCapacity(capacity.masks)
        rows.reserveCapacity(capacity.rows)
        records.reserveCapacity(capacity.records)
    }

    init(entities: [BatchEntityPlan], text: [UInt8]) {
        self.entities = entities
        keepsStoredObjects = entities.contains { $0.rule == .keepExisting }
        requiredPositions = entities.flatMap(\.requiredPositions)
        defaultCells = entities.flatMap(\.defaultCells)
        var (defaults, required) = (0, 0)
        for plan in entities {
            shapes.append(RowShape(entity: plan.shape, defaults: defaults..<defaults + plan.defaultCells.count,
                                   required: required..<required + plan.requiredPositions.count))
            (defaults, required) = (shapes.last!.defaults.upperBound, shapes.last!.required.upperBound)
        }
        self.text = text
    }

    /// An empty request for `plans`, with the defaults that are not plain cells kept as values.
    init(plans: [BatchEntityPlan], text: [UInt8]) {
        self.init(entities: plans, text: text)
        defaultValues = plans.map { plan in
            plan.info.attributeDefaults.enumerated().compactMap { position, value in
                guard let value, case .null = plan.defaultCells[position] else { return nil }
                return (position, value)
            }
        }
        for entity in shapes.indices { shapes[entity].hasDefaultValues = !defaultValues[entity].isEmpty }
    }

    /// Records added so far.
    package var recordCount: Int { records.count }
    package var isEmpty: Bool { records.isEmpty }

    /// The caller's number of record `index` (given to `beginRecord(number:)`).
    package func recordNumber(_ index: Int) -> Int { records[index].number }

    /// Starts the rows of another record; `number` comes back with its rejection, if any.
    package mutating func beginRecord(number: Int) {
        records.append(Record(number: number, firstRow: rows.count))
    }

    /// Adds a row of `entity` (an index from `BatchInserter.entityIndex(_:)`) to the
    /// current record, filled with the model's defaults; returns the row's number.
    /// A record's first row is its own object; rows are written after the rows they link to.
    package mutating func addRow(entity: Int, mode: Mode) -> Int {
        guard !records.isEmpty else { fatalError("beginRecord before addRow") }
        let shape = shapes[entity]
        rows.append(Row(entity: entity, mode: mode, firstCell: cells.count, firstLink: links.count, firstMask: masks.count))
        defaultCells.withUnsafeBufferPointer { defaults in
            cells.append(contentsOf: UnsafeBufferPointer(rebasing: defaults[shape.defaults]))
        }
        // One element at a time: a row adds one or two, and `append(contentsOf: repeatElement(…))`
        // costs about a hundred instructions a call whatever the count.
        for _ in 0..<shape.entity.toOnes { links.append(-1) }
        for _ in 0..<shape.entity.maskWords { masks.append(0) }
        if shape.hasDefaultValues {
            for (position, value) in defaultValues[entity] { set(value, row: rows.count - 1, attribute: position) }
        }
        if let lineage, let positions = shape.entity.lineage {
            set(.int(lineage.run), row: rows.count - 1, attribute: positions.run)
            set(.int(lineage.chunk), row: rows.count - 1, attribute: positions.chunk)
            set(.int(Int64(records[records.count - 1].number)), row: rows.count - 1, attribute: positions.record)
        }
        return rows.count - 1
    }

    /// Sets attribute `position` (its place in the entity's attributes) of `row`.
    /// `given`: the record gives this value (false for a default standing in for an
    /// absent field), so it overwrites a stored row's under the `update` rule.
    @inline(__always)
    package mutating func set(_ cell: Cell, row: Int, attribute position: Int, given: Bool = true) {
        let stored = rows[row]
        cells[stored.firstCell + position] = cell
        if given { masks[stored.firstMask + position >> 6] |= 1 << UInt64(position & 63) }
    }

    /// One cell for `set(row:_:)`.
    package struct Assignment {
        package var cell: Cell
        package var position: Int32
        package var given: Bool

        package init(_ cell: Cell, position: Int, given: Bool = true) {
            self.cell = cell
            self.position = Int32(position)
            self.given = given
        }
    }

    /// `set(_:row:attribute:given:)` for several attributes of `row` at once: the row
    /// mapper's fast path sets a row's fields in one call (a call per field from its
    /// module, which Swift does not inline for a `package` type, cost about 60 instructions).
    package mutating func set(row: Int, _ assignments: UnsafeBufferPointer<Assignment>) {
        let stored = rows[row]
        cells.withUnsafeMutableBufferPointer { cells in
            masks.withUnsafeMutableBufferPointer { masks in
                for assignment in assignments {
                    let position = Int(assignment.position)
                    cells[stored.firstCell + position] = assignment.cell
                    if assignment.given { masks[stored.firstMask + position >> 6] |= 1 << UInt64(position & 63) }
                }
            }
        }
    }

    private mutating func markGiven(row: Int, bit: Int) {
        masks[rows[row].firstMask + bit >> 6] |= 1 << UInt64(bit & 63)
    }

    /// Whether the record gives bit `bit` (attribute, then to-one) of `row`.
    func isGiven(row: Row, bit: Int) -> Bool {
        masks[row.firstMask + bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    /// Sets attribute `position` of `row` (a row of the current record) to a value kept in the
    /// request (a decimal in its canonical form, `DecimalText`).
    package mutating func set(_ value: Value?, row: Int, attribute position: Int, given: Bool = true) {
        guard let value = value?.canonicalized else { return set(.null, row: row, attribute: position, given: given) }
        let info = entities[rows[row].entity].info
        if !info.attributeTypes[position].accepts(value), records[records.count - 1].invalid == nil {
            records[records.count - 1].invalid = "\(info.name).\(info.attributeNames[position]): \(value) is not a valid \(info.attributeTypes[position].rawValue)"
        }
        values.append(value)
        set(.value(Int32(values.count - 1)), row: row, attribute: position, given: given)
    }

    /// Links `row` to `target` through the to-one relationship at `toOne` (from
    /// `BatchInserter.toOneIndex(_:of:)`).
    package mutating func link(row: Int, toOne: Int, to target: Int) {
        links[rows[row].firstLink + toOne] = Int32(target)
        markGiven(row: row, bit: entities[rows[row].entity].info.attributeNames.count + toOne)
    }

    /// Drops the current record's rows (a record that turned out not to map).
    package mutating func abandonRecord() {
        guard let record = records.popLast() else { return }
        if record.firstRow < rows.count {
            let first = rows[record.firstRow]
            cells.removeSubrange(first.firstCell...)
            links.removeSubrange(first.firstLink...)
            masks.removeSubrange(first.firstMask...)
            rows.removeSubrange(record.firstRow...)
        }
    }

    /// Empties the request for records read from `text`, in the memory it has when nothing
    /// else holds its arrays (a batch already saved): a mapper's next batch then fills
    /// memory it filled before, not fresh pages (a page fault and a zeroed page per 4 KiB).
    /// The plans and their defaults stay; the lineage is cleared.
    package mutating func removeAll(text: [UInt8]) {
        self.text = text
        lineage = nil
        values.removeAll(keepingCapacity: true)
        cells.removeAll(keepingCapacity: true)
        links.removeAll(keepingCapacity: true)
        masks.removeAll(keepingCapacity: true)
        rows.removeAll(keepingCapacity: true)
        records.removeAll(keepingCapacity: true)
    }

    func rowRange(ofRecord index: Int) -> Range<Int> {
        records[index].firstRow..<(index + 1 < records.count ? records[index + 1].firstRow : rows.count)
    }

    /// The value of a cell, built (for checks and messages only, not the write path).
    func value(_ cell: Cell, type: AttributeType) -> Value? {
        switch cell {
        case .null: return nil
        case .int(let number): return type == .bool ? .bool(number != 0) : .int(number)
        case .double(let number): return type == .date ? .date(Date(timeIntervalSinceReferenceDate: number)) : .double(number)
        case .text(let offset, let count):
            return .string(String(decoding: text[Int(offset)..<Int(offset + count)], as: UTF8.self))
        case .value(let index): return values[Int(index)]
        }
    }
}
