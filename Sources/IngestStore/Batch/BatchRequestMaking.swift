/// A writer of `BatchInsertRequest`s as record mappers see it: entity and to-one
/// positions, and empty requests. The SQLite `BatchInserter` and the PostgreSQL
/// `PostgresBatchWriter` both are one, so one mapper fills requests for either store.
package protocol BatchRequestMaking: AnyObject {
    /// The index of `entity` for `BatchInsertRequest.addRow`, or nil when the batch path
    /// cannot write it.
    func entityIndex(_ entity: String) -> Int?
    /// The index of the to-one `relationship` of `entity` for `BatchInsertRequest.link`.
    func toOneIndex(_ relationship: String, of entity: Int) -> Int?
    /// An empty request, reading text cells from `text`.
    func makeRequest(text: [UInt8]) -> BatchInsertRequest
}
