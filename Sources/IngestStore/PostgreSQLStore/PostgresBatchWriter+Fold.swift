/// Folding: each key's rows of a request, in record order, become one entry of its
/// entity's batch, by the entity's rule.
extension PostgresBatchWriter {
    /// Record by record: a record whose new rows lack required values is rejected whole
    /// (as on SQLite), new objects related to a kept one are not made (nothing would link
    /// them), and each key's rows fold in record order into one write.
    func fold(_ accepted: [Int], _ state: inout WriteState) {
        let (request, rowSlot) = (state.request, state.rowSlot)
        let noKeys = [Value?](repeating: nil, count: request.rows.count)
        for record in accepted {
            let range = request.rowRange(ofRecord: record)
            let unlinked = request.unlinkedNewRows(in: range) { request, rowIndex in
                let (entity, slot) = (request.rows[rowIndex].entity, rowSlot[rowIndex])
                guard slot >= 0, state.batches[entity].isStoredOrFolded(slot) else { return .new }
                return state.batches[entity].placeholder[Int(slot)] ? .placeholder : .stored
            }
            let reason = request.mayHaveProblem(in: range, skipping: unlinked)
                ? (try? request.problem(in: range, keys: noKeys, skipping: unlinked) { entity, value in
                    guard let key = keyBytes(value), let slot = state.batches[entity].slotOf[key] else { return nil }
                    return state.batches[entity].stored[Int(slot)] ?? (state.batches[entity].foldedAt[Int(slot)] >= 0 ? -1 : nil)
                }) ?? nil
                : nil
            if let reason {
                state.reject(record, reason)
                if assumesNewKeys {
                    for rowIndex in range where undestined[request.rows[rowIndex].entity] && rowSlot[rowIndex] >= 0 {
                        let entity = request.rows[rowIndex].entity
                        state.rejectedAsNew.append((entity, state.batches[entity].keys[Int(rowSlot[rowIndex])]))
                    }
                }
                continue
            }
            state.result.records += 1
            // A record's rows fold last to first, the order the SQLite batch path writes them in.
            for rowIndex in range.reversed() where unlinked.isEmpty || !unlinked.contains(rowIndex) {
                let row = request.rows[rowIndex]
                let entity = row.entity
                let own = rowIndex == range.lowerBound
                let bits = shapes[entity].attributes + shapes[entity].toOnes
                let slot = rowSlot[rowIndex]
                let entry = Folded(op: UInt8(ascii: "i"), record: record, firstCell: row.firstCell,
                                   cellCount: shapes[entity].attributes, slot: slot)
                guard slot >= 0 else {
                    _ = state.batches[entity].append(entry, row: row, request, rowSlot: rowSlot, maskBits: bits)
                    continue
                }
                // A key met first by reference is a placeholder until a row describes it.
                if state.batches[entity].foldedAt[Int(slot)] < 0 && state.batches[entity].stored[Int(slot)] == nil {
                    state.batches[entity].placeholder[Int(slot)] = row.mode == .findOrCreate
                }
                let at = state.batches[entity].foldedAt[Int(slot)]
                let storedPK = state.batches[entity].stored[Int(slot)]
                if at >= 0, let storedPK, row.mode == .upsert, shapes[entity].lineage != nil,
                   state.batches[entity].folded[Int(at)].op == UInt8(ascii: "u") {
                    // Lineage names the row that changed the stored row, which only the stored values
                    // tell: a later row of a stored key is an UPDATE of its own, one round after the
                    // earlier's, as SQLite writes them one after another (found by review).
                    var update = entry
                    update.op = UInt8(ascii: "u")
                    update.pk = storedPK
                    update.round = state.batches[entity].folded[Int(at)].round + 1
                    let index = state.batches[entity].append(update, row: row, request, rowSlot: rowSlot, maskBits: 0)
                    _ = apply(row, to: index, in: &state.batches[entity], request, rowSlot: rowSlot)
                    if own { state.awaitingVerdict.append((entity, record, storedPK >= (firstRowOfRun[plans[entity].info.name] ?? .max))) }
                } else if at >= 0 {
                    let changed = apply(row, to: Int(at), in: &state.batches[entity], request, rowSlot: rowSlot)
                    if own {
                        // Made earlier in this run: in this request, or stored since the run began.
                        state.result.countStored(changed: changed, madeThisRun: storedPK.map { $0 >= (firstRowOfRun[plans[entity].info.name] ?? .max) } ?? true)
                    }
                } else if let storedPK {
                    var update = entry
                    update.op = UInt8(ascii: "u")
                    update.pk = storedPK
                    let index = state.batches[entity].append(update, row: row, request, rowSlot: rowSlot, maskBits: 0)
                    _ = apply(row, to: index, in: &state.batches[entity], request, rowSlot: rowSlot)
                    if own { state.awaitingVerdict.append((entity, record, storedPK >= (firstRowOfRun[plans[entity].info.name] ?? .max))) }
                } else {
                    _ = state.batches[entity].append(entry, row: row, request, rowSlot: rowSlot, maskBits: bits)
                }
            }
        }
    }

    /// Applies `row` to entry `index` of `batch` by the plan's rule; returns whether a value
    /// it gives differs from what the entry held (or is not known to be the same).
    func apply(_ row: BatchInsertRequest.Row, to index: Int, in batch: inout EntityBatch, _ request: BatchInsertRequest,
                       rowSlot: [Int32]) -> Bool {
        guard row.mode == .upsert else { return false }
        let plan = plans[row.entity]
        // The first row that describes a placeholder fills it as `update` writes, whatever the rule.
        let slot = Int(batch.folded[index].slot)
        let filling = slot >= 0 && batch.placeholder[slot]
        if slot >= 0 { batch.placeholder[slot] = false }
        if filling { batch.folded[index].fills = true }
        let rule = filling ? .update : plan.rule
        guard rule == .update || rule == .replace else { return false }
        let attributes = plan.info.attributeNames.count
        var changed = false
        let info = plan.info
        for bit in 0..<(attributes + batch.linkCount) where bit != plan.keyPosition && !(bit < attributes && info.isLineage(bit)) {
            guard rule == .replace || request.isGiven(row: row, bit: bit) else { continue }
            let known = batch.folded[index].op == UInt8(ascii: "i") || batch.isSet(bit, entry: index)
            if bit < attributes {
                let cell = request.cells[row.firstCell + bit]
                if !known || !same(batch.cell(bit, of: index, request), cell, request) { changed = true }
                batch.refold(index, request)
                batch.refoldedCells[batch.folded[index].firstCell + bit] = cell
            } else {
                let link = index * batch.linkCount + bit - attributes
                let target = Int(request.links[row.firstLink + bit - attributes])
                let given = target < 0 ? -1 : rowSlot[target]
                if !known || batch.links[link] != given { changed = true }
                batch.links[link] = given
            }
            batch.masks[index * batch.maskWords + bit >> 6] |= 1 << UInt64(bit & 63)
        }
        // Lineage follows the last row that changed something (or filled a placeholder), as
        // SQLite's row-by-row writes leave it.
        if (changed || filling) && !info.lineagePositions.isEmpty {
            batch.refold(index, request)
            for position in info.lineagePositions {
                batch.refoldedCells[batch.folded[index].firstCell + position] = request.cells[row.firstCell + position]
                batch.masks[index * batch.maskWords + position >> 6] |= 1 << UInt64(position & 63)
            }
        }
        return changed
    }

    func same(_ a: BatchInsertRequest.Cell, _ b: BatchInsertRequest.Cell, _ request: BatchInsertRequest) -> Bool {
        switch (a, b) {
        case (.text(let o1, let c1), .text(let o2, let c2)):
            return c1 == c2 && request.text[Int(o1)..<Int(o1 + c1)].elementsEqual(request.text[Int(o2)..<Int(o2 + c2)])
        case (.value(let i), .value(let j)):
            return request.values[Int(i)] == request.values[Int(j)]
        case (.text, .value), (.value, .text):
            return keyText(a, request) == keyText(b, request)
        default:
            return a == b
        }
    }
}
