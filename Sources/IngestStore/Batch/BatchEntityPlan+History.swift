extension BatchEntityPlan {
    /// The attributes and to-one relationships a row of this entity gives (its key left
    /// out): what an update of a stored object by it may change, as history names them.
    func givenProperties(_ request: BatchInsertRequest, row: BatchInsertRequest.Row) -> [String] {
        var names: [String] = []
        for position in info.attributeNames.indices where position != keyPosition && (rule == .replace || request.isGiven(row: row, bit: position)) {
            names.append(info.attributeNames[position])
        }
        for (number, link) in info.toOneColumns.enumerated()
        where rule == .replace || request.isGiven(row: row, bit: info.attributeNames.count + number) {
            names.append(info.relationships[link.relationship].relationship.name)
        }
        return names
    }
}
