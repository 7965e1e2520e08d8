extension Duration {
    /// The duration in seconds, for rates and reports.
    package var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
