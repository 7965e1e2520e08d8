/// What a save checks before its transaction: delete rules, then validation (required
/// values, types, dates, what the backend can hold, attribute rules, the entities' own
/// `validateFor…`).
extension ObjectContext {
    func applyDeleteRules() throws {
        var problems: [ValidationProblem] = []
        var work = Array(deletedSet.values)
        var next = 0
        while next < work.count {
            let object = work[next]
            next += 1
            if object.isFault {
                guard let row = loadRow(object.objectID, object.info) else { continue }
                object.apply(row)
            }
            for (index, relationship) in object.info.relationships.enumerated() {
                let related = relationship.isToMany
                    ? Array(members(of: object, index))
                    : [object.toOne[index]].compactMap { $0 }
                let live = related.filter { deletedSet[$0] == nil }
                guard !live.isEmpty else { continue }
                switch relationship.relationship.deleteRule {
                case .deny:
                    problems.append(ValidationProblem(object: "\(object.objectID)", objectID: object.objectID, entity: object.info.name, key: uniquenessKey(object),
                                                      property: relationship.relationship.name, rule: .deleteDenied,
                                                      message: "has \(live.count) related object(s) and the deny rule"))
                case .cascade:
                    for id in live {
                        let other = self.object(with: id)
                        delete(other)
                        if other.isDeleted && deletedSet[id] != nil { work.append(other) }
                    }
                case .nullify:
                    let destination = entityInfo(relationship.destination)
                    let inverse = destination.relationshipIndex[relationship.inverseName]!
                    for id in live {
                        guard let other = registered[id] else { continue }
                        if destination.relationships[inverse].isToMany {
                            if other.toMany[inverse].committed != nil { other.toMany[inverse].remove(object.objectID) }
                        } else if other.toOne[inverse] == object.objectID {
                            // Not a change of the other object's (the delete makes it in the
                            // store), and its snapshot keeps the row as read: the conflict
                            // check compares that with the store, which holds the link until
                            // the delete runs.
                            other.toOne[inverse] = nil
                        }
                    }
                }
            }
        }
        if !problems.isEmpty { throw StoreError.validation(problems) }
    }

    func validate() throws {
        var problems: [ValidationProblem] = []
        let store = coordinator.store
        let candidates = insertedList + updatedSet.compactMap { registered[$0] }.filter { !$0.isFault && !$0.isDeleted }
        for object in candidates {
            let info = object.info
            func problem(_ index: Int, _ rule: ValidationProblem.Rule, _ message: String) -> ValidationProblem {
                ValidationProblem(object: label(object), objectID: object.objectID, entity: info.name, key: uniquenessKey(object),
                                  property: info.attributeNames[index], rule: rule, message: message)
            }
            object.values.withUnsafeBufferPointer { values in
                for index in values.indices {
                    if let value = values[index] {
                        if !info.attributeTypes[index].accepts(value) {
                            problems.append(problem(index, .type, "\(value) is not a valid \(info.attributeTypes[index].rawValue)"))
                        } else if case .date(let date) = value, let reason = StoredDate.problem(date) {
                            problems.append(problem(index, .dateRange, reason))
                        } else if let reason = store.refusal(of: value) {
                            problems.append(problem(index, .storable, reason))
                        }
                    } else if info.attributeRequired[index] {
                        problems.append(problem(index, .required, "is required"))
                    }
                }
            }
            if info.hasChecks { problems += ruleProblems(object) }
        }
        problems += lifecycleProblems()
        if !problems.isEmpty { throw StoreError.validation(problems) }
    }

    /// The value rules (`AttributeRules`) the object's values break; values of the wrong
    /// type are left to the type check.
    private func ruleProblems(_ object: ManagedObject) -> [ValidationProblem] {
        let info = object.info
        var problems: [ValidationProblem] = []
        for (index, check) in info.attributeChecks.enumerated() {
            guard let check, let value = object.values[index], info.attributeTypes[index].accepts(value),
                  let broken = check.problem(value) else { continue }
            problems.append(ValidationProblem(object: label(object), objectID: object.objectID, entity: info.name, key: uniquenessKey(object),
                                              property: info.attributeNames[index], rule: broken.rule, message: broken.message))
        }
        return problems
    }

    /// An object as messages name it: its entity and uniqueness key ("Event 17"), else
    /// its row ("Event row 4") or "a new Event".
    func label(_ object: ManagedObject) -> String {
        let values = uniquenessKey(object)
        if !values.isEmpty { return object.info.name + " " + values.map(\.description).joined(separator: ", ") }
        if let pk = object.objectID.primaryKey { return "\(object.info.name) row \(pk)" }
        return "a new \(object.info.name)"
    }

    /// The values of the object's first uniqueness key, or none when it has none or they are not all set.
    func uniquenessKey(_ object: ManagedObject) -> [Value] {
        guard let positions = object.info.uniquenessPositions.first else { return [] }
        let values = positions.compactMap { object.values[$0] }
        return values.count == positions.count ? values : []
    }
}
