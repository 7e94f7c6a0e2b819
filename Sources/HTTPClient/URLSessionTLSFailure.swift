import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLSession` failure that is a TLS problem retrying cannot fix, and its
/// cause: an untrusted issuer, an expired certificate, another name, a server
/// that does not answer in TLS.
///
/// swift-corelibs-foundation reports every libcurl TLS failure as
/// `URLError(.unknown)` (-1): it keeps no libcurl code, only libcurl's
/// message as the localized description (checked with libcurl 7.88.1 and
/// OpenSSL 3.0 against servers with each test certificate). So on Linux the
/// cause is read from that message; the patterns are libcurl's own, stable
/// for many years (`SSL certificate problem: <X509 reason>`, `SSL: no
/// alternative certificate subject name matches target …`, OpenSSL's
/// `wrong version number`). A message that matches none of them is no TLS
/// failure as far as this type knows, and stays retryable, as a reset
/// mid-handshake (`SSL_ERROR_SYSCALL`) should. Apple's `URLSession` reports
/// certificate failures with codes of their own, which are used instead.
struct URLSessionTLSFailure: Sendable, Equatable {
    /// What went wrong, in the words the native transport uses for the same cause.
    enum Cause: Sendable, Equatable {
        case untrustedIssuer, nameMismatch, expired, notYetValid, certificateRejected
        case plainHTTPServer, protocolVersion, handshakeRefused

        var explanation: String {
            switch self {
            case .untrustedIssuer: "its certificate's issuer is not trusted"
            case .nameMismatch: "its certificate is for another name"
            case .expired: "its certificate has expired"
            case .notYetValid: "its certificate is not valid yet"
            case .certificateRejected: "its certificate was rejected"
            case .plainHTTPServer:
                "it did not answer in TLS, so it is most likely a plain HTTP server behind an https:// address"
            case .protocolVersion: "it shares no TLS protocol version with this client"
            case .handshakeRefused: "it refused the TLS handshake"
            }
        }
    }

    var cause: Cause
    /// What `URLSession` (libcurl, on Linux) said, for the message.
    var detail: String

    /// Classifies what `URLSession` reported.
    ///
    /// - Parameter error: The error a task completed with.
    /// - Returns: Nil when it is not a TLS failure that retrying cannot fix.
    init?(_ error: any Error) {
        let code = (error as? URLError)?.code.rawValue ?? (error as NSError).code
        self.init(code: code, description: (error as NSError).userInfo[NSLocalizedDescriptionKey] as? String)
    }

    /// Classifies a `URLError` code and its localized description.
    init?(code: Int, description: String?) {
        let detail = String((description ?? "").prefix(300))
        if let cause = Self.cause(ofAppleCode: code) ?? Self.cause(ofLibcurlMessage: detail) {
            self.cause = cause
            self.detail = detail.isEmpty ? "URLError \(code)" : detail
        } else {
            return nil
        }
    }

    /// Apple's certificate codes; -1200 (`secureConnectionFailed`) is left alone, as it is
    /// also what a connection broken mid-handshake reports.
    private static func cause(ofAppleCode code: Int) -> Cause? {
        switch code {
        case URLError.Code.serverCertificateHasUnknownRoot.rawValue: .untrustedIssuer
        case URLError.Code.serverCertificateHasBadDate.rawValue: .expired
        case URLError.Code.serverCertificateNotYetValid.rawValue: .notYetValid
        case URLError.Code.serverCertificateUntrusted.rawValue: .certificateRejected
        default: nil
        }
    }

    /// libcurl's words (with OpenSSL) for failures that will recur however often the request is sent.
    private static func cause(ofLibcurlMessage message: String) -> Cause? {
        let text = message.lowercased()
        func has(_ words: String...) -> Bool { words.contains { text.contains($0) } }
        if has("ssl certificate problem") {
            // `SSL certificate problem: <X509_verify_cert_error_string>`.
            if has("has expired") { return .expired }
            if has("not yet valid") { return .notYetValid }
            if has(
                "self-signed certificate", "self signed certificate", "unable to get local issuer",
                "unable to get issuer", "unable to verify the first certificate")
            {
                return .untrustedIssuer
            }
            return .certificateRejected
        }
        if has("no alternative certificate subject name matches", "does not match target host name") {
            return .nameMismatch
        }
        // OpenSSL's verdict on a first answer that is not a TLS record: a server speaking plain text.
        if has("wrong version number", "packet length too long") { return .plainHTTPServer }
        if has("unsupported protocol", "alert protocol version", "no protocols available") { return .protocolVersion }
        if has("alert handshake failure", "no shared cipher") { return .handshakeRefused }
        return nil
    }

    /// The transport's error: ``HTTPTransportError/Kind/tlsFailure``, permanent, naming the
    /// server (`host:port`, never the path, which may hold a credential).
    func transportError(server: String) -> HTTPTransportError {
        let message = "Cannot talk to \(server) over TLS: \(cause.explanation) (URLSession: \(detail))."
        #if canImport(FoundationNetworking)
        // URLSession on Linux trusts only the system's certificate store.
        let remedy: HTTPTransportError.Remedy? = cause == .untrustedIssuer ? .transportWithOwnTrustRoots : nil
        #else
        let remedy: HTTPTransportError.Remedy? = nil
        #endif
        return HTTPTransportError(kind: .tlsFailure, message: message, permanent: true, remedy: remedy)
    }
}
