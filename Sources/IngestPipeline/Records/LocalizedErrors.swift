public import Foundation

// `localizedDescription` says what `description` says, not Foundation's "The operation
// could not be completed" (`error.localizedDescription` is what most programs print).

extension ImportError: LocalizedError {
    public var errorDescription: String? { description }
}

extension PipelineError: LocalizedError {
    public var errorDescription: String? { description }
}

extension CoercionError: LocalizedError {
    public var errorDescription: String? { description }
}

extension PipelineInference.EmptyFeed: LocalizedError {
    public var errorDescription: String? { description }
}
