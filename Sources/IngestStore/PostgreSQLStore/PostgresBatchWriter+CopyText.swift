/// Rows in COPY's text format: new rows for their tables, stored rows' changes for the
/// staging table.
extension PostgresBatchWriter {
    /// New rows (entries `entries` of `batch`) in COPY's text format, for the entity's own
    /// table: the row number (unless `numbered` is false: the table gives it), each attribute
    /// in its column's text form, each link's row number.
    func appendNewRows(_ entries: [Int], of batch: EntityBatch, entity: Int, _ request: BatchInsertRequest, numbered: Bool = true,
                       linked: (Int, Int, Int32) -> Int64?, to stream: inout CopyStream) {
        let plan = plans[entity]
        for index in entries {
            let entry = batch.folded[index]
            if numbered { Self.appendInteger(entry.pk, to: &stream.data) }
            for position in 0..<entry.cellCount {
                if numbered || position > 0 { stream.data.append(0x09) }
                appendColumnValue(batch.cell(position, of: index, request), type: plan.info.attributeTypes[position], request, to: &stream.data)
            }
            appendLinks(of: index, in: batch, entity: entity, linked: linked, to: &stream.data)
            stream.data.append(0x0A)
            stream.rowEnded()
        }
    }

    /// Stored rows' changes (entries `entries` of `batch`) in COPY's text format, for the staging table.
    func appendStagedRows(_ entries: [Int], of batch: EntityBatch, entity: Int, _ request: BatchInsertRequest,
                          linked: (Int, Int, Int32) -> Int64?, to stream: inout CopyStream) {
        let plan = plans[entity]
        for index in entries {
            let entry = batch.folded[index]
            Self.appendInteger(Int64(entry.record), to: &stream.data)
            stream.data.append(0x09)
            Self.appendInteger(entry.pk, to: &stream.data)
            for position in 0..<entry.cellCount {
                stream.data.append(0x09)
                appendCell(batch.cell(position, of: index, request), type: plan.info.attributeTypes[position], request, to: &stream.data)
            }
            appendLinks(of: index, in: batch, entity: entity, linked: linked, to: &stream.data)
            for word in 0..<batch.maskWords {
                stream.data.append(0x09)
                Self.appendInteger(Int64(bitPattern: batch.masks[index * batch.maskWords + word]), to: &stream.data)
            }
            stream.data.append(0x0A)
            stream.rowEnded()
        }
    }

    /// Entry `index`'s links, each after a tab: the linked row's number, or `\N`.
    private func appendLinks(of index: Int, in batch: EntityBatch, entity: Int, linked: (Int, Int, Int32) -> Int64?,
                             to data: inout ByteBuffer) {
        for number in 0..<batch.linkCount {
            data.append(0x09)
            if let pk = linked(entity, number, batch.links[index * batch.linkCount + number]) {
                Self.appendInteger(pk, to: &data)
            } else {
                data.appendBigEndian(UInt16(0x5C4E))
            }
        }
    }
}
