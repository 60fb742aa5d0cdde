import Foundation
import SyncgateTestSupport
import Testing

@testable import SyncgateS3

/// Seeded fuzzing of what the S3 destination reads from a server: XML error bodies, ListObjectsV2 pages,
/// DeleteObjects results and Retry-After values. See ``Fuzzer``.
@Suite("S3 parsers under fuzzing")
struct S3ParserFuzzTests {
    static let seeds: [[UInt8]] = [
        #"<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>"#,
        #"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>out/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken><Contents><Key>out/a%20b.txt</Key><Size>12</Size><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag></Contents><Contents><Key>out/&lt;x&gt;</Key><Size>0</Size></Contents></ListBucketResult>"#,
        #"<DeleteResult><Deleted><Key>a</Key></Deleted><Error><Key>b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>"#,
        #"<Error><Code>InternalError</Code><Message><![CDATA[We encountered an internal error.]]></Message></Error>"#,
    ].map { Array($0.utf8) }

    /// Inputs that crashed a parser once, kept as regression tests.
    static let crashers: [[UInt8]] = [
        // An element name with invalid UTF-8: swift-corelibs-foundation's XMLParser traps in
        // _NSXMLParserStartElementNs (signal 4).
        Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToke".utf8)
            + [0xFF, 0xFF, 0xFF, 0xFF] + Array("eGcx=</NextContinuationToken></ListBucketResult>".utf8),
        Array("<Er2or><Co".utf8) + [0, 0, 0, 0] + Array("ntent>x</Co></Er2or>".utf8),
        // A processing instruction without data: XMLParser calls strlen(NULL) (signal 11).
        Array("<?xm?><Error><Code>SlowDown</Code></Error>".utf8),
        Array("<Error><?pi?><Code>SlowDown</Code></Error>".utf8),
        Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?4258><Error><Code>Slow</Code></Error>><?pi?><Code>x</Code>".utf8),
        // Entities are never part of an S3 answer.
        Array("<?xml version=\"1.0\"?><!DOCTYPE e [<!ENTITY a \"aaaa\">]><Error><Code>&a;</Code></Error>".utf8),
    ]

    @Test func formerCrashersAreRefusedCleanly() {
        for bytes in Self.crashers {
            #expect(S3XMLElement.parse(Data(bytes)) == nil)
            #expect(S3ErrorResponse(status: 500, body: Data(bytes)).code == nil)
        }
    }

    @Test func xmlBodiesNeverCrash() {
        var fuzzer = Fuzzer("s3-xml", seeds: Self.seeds + Self.crashers, rounds: 15_000)
        let executions = fuzzer.run { bytes in
            let data = Data(bytes)
            if let root = S3XMLElement.parse(data) {
                for content in root.all("Contents") {
                    _ = content.value("Key")
                    _ = content.value("Size").flatMap { Int64($0) }
                }
                _ = root.value("NextContinuationToken")
            }
            let error = S3ErrorResponse(status: 503, body: data)
            _ = error.destinationError("PutObject s3://b/k")
            _ = S3DeleteResult(data) { $0 }
        }
        #expect(executions >= 15_000)
    }

    @Test func retryAfterValuesNeverCrash() {
        var fuzzer = Fuzzer("s3-retry-after", seeds: ["120", "Wed, 21 Oct 2026 07:28:00 GMT", "-1", "1e309"].map { Array($0.utf8) }, rounds: 20_000)
        fuzzer.run { bytes in
            _ = S3Client.retryAfter(String(decoding: bytes, as: UTF8.self), now: Date())
        }
    }
}
