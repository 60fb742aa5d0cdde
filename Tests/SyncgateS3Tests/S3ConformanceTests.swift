import DestinationConformance
import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// The destination conformance suite (Tests/DestinationConformance) against moto: the awkward names with signature
/// checking off (with it on, moto miscomputes the signature of such keys and of a `/` in a query, see
/// ../shared/docs/s3-test-servers.md; the SigV4 vectors cover signing them), refused credentials with it on.
@Suite("S3 destination conformance", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3ConformanceTests {
    @Test func conforms() async throws {
        let server = try await S3TestServer(auth: false, buckets: ["conformance"])
        defer { server.stop() }
        let checking = try await S3TestServer(buckets: ["conformance"])
        defer { checking.stop() }
        let readBack = try TemporaryDirectory("s3-conformance-readback")
        defer { readBack.remove() }
        let unreachable = Loopback.freePort()
        let harness = DestinationConformance.Harness(
            name: "s3",
            working: { S3DestinationMotoTests.destination(server, bucket: "conformance", prefix: "c/") },
            unreachable: {
                S3Destination(settings: S3Settings(
                    endpoint: URL(string: "http://127.0.0.1:\(unreachable)")!, region: "us-east-1", bucket: "conformance", prefix: "",
                    pathStyle: true, credentials: SigV4Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey)))
            },
            refused: { S3DestinationMotoTests.destination(checking, bucket: "conformance", secret: "Not/The+Right+Secret000000000000000000000") },
            readBack: { name in try await server.objects(bucket: "conformance", into: readBack.url)[name]?.data },
            findsExistingCopies: true)
        let problems = await DestinationConformance.run(harness)
        #expect(problems.isEmpty, "\(problems)")
    }
}
