import HTTPTypes

/// Header names HTTPTypes does not name itself.
extension HTTPField.Name {
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// The scheme a TLS proxy in front was asked with.
    static let xForwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    /// Tells nginx and its kind not to buffer a response (the event stream).
    static let xAccelBuffering = HTTPField.Name("X-Accel-Buffering")!
}
