import ArgumentParser
import IngestJSON

/// `--style` / `--feed-style` take the generator's styles by name.
extension FeedGenerator.Style: ExpressibleByArgument {}
