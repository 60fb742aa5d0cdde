import Foundation
import SyncgateTestSupport
import Testing

/// Whether the tests that need a moto server run: when moto is installed, and always under
/// `SYNCGATE_REQUIRE_SERVERS=1` (a missing moto is then a failure, not a skip).
enum S3TestGate {
    static let unavailableReason: String? = S3TestServer.unavailableReason
    static var motoEnabled: Bool { unavailableReason == nil || TestPaths.serversRequired }
    static let motoComment: Comment = "needs moto[server] and boto3 for python3 (scripts/test-deps.d/s3.sh installs them)"
}
