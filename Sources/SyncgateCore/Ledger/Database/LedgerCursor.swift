/// Rows read one at a time (inside the read that made the cursor).
protocol LedgerCursor: AnyObject {
    /// The next row, or nil once they are used up. Valid until the following call.
    func next() throws -> LedgerRow?
}
