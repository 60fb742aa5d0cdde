/// Says in words why a TLS handshake failed when the reason is the server's certificate, and what to do about
/// it, from NIOSSL's error (read as text: its types are the plugins' to classify).
public enum TLSFailureHint {
    /// `the server's certificate is not signed by a CA trusted here (the system's CA store) ...`, or nil when
    /// `error` is not about the certificate. `keys` names what sets the trust for this destination
    /// (`ca_file, AWS_CA_BUNDLE or SSL_CERT_FILE`).
    public static func text(for error: any Error, trust: TLSTrust, keys: String) -> String? {
        let text = String(describing: error)
        if text.contains("failedToValidateHostname") || text.contains("HOSTNAME_MISMATCH") || text.contains("cannotMatchULabel") {
            return "the server's certificate is not for this host name (\(short(text))); check the endpoint's host"
        }
        let untrusted = ["CERTIFICATE_VERIFY_FAILED", "unableToValidateCertificate", "UNABLE_TO_GET_ISSUER", "SELF_SIGNED_CERT", "CERT_UNTRUSTED"]
        if untrusted.contains(where: text.contains) {
            return "the server's certificate is not signed by a CA trusted here (CERTIFICATE_VERIFY_FAILED; trusted: \(trust)); "
                + "trust its CA with \(keys) (docs/network.md)"
        }
        if text.contains("CERTIFICATE_EXPIRED") || text.contains("CERT_HAS_EXPIRED") {
            return "the server's certificate has expired or is not valid yet (\(short(text)))"
        }
        return nil
    }

    private static func short(_ text: String) -> String {
        text.count > 200 ? String(text.prefix(200)) + "..." : text
    }
}
