import ArgumentParser
import IngestJSON

/// `--style` / `--feed-style`: which feed the generator makes (`FeedGenerator.Style`).
enum FeedStyleOption: String, ExpressibleByArgument, CaseIterable {
    case realistic, classic

    var style: FeedGenerator.Style {
        switch self {
        case .realistic: .realistic
        case .classic: .classic
        }
    }
}
