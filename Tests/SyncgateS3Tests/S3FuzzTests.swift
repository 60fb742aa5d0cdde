import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// Seeded fuzzing of what the plugin reads from a server: the XML answers (errors, listings, DeleteObjects results,
/// CompleteMultipartUpload) and URL-encoded keys. Every input must parse or be refused, never crash or hang.
@Suite("S3 answers under fuzzing")
struct S3FuzzTests {
    static let xmlSeeds: [[UInt8]] = [
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SignatureDoesNotMatch</Code><Message>m &amp; n</Message><RequestId>R</RequestId></Error>",
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><IsTruncated>true</IsTruncated><NextContinuationToken>t/+=</NextContinuationToken><EncodingType>url</EncodingType><Contents><Key>a%20b+c</Key><Size>5</Size></Contents></ListBucketResult>",
        "<DeleteResult><Deleted><Key>k</Key></Deleted><Error><Key>x</Key><Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>",
        "<CompleteMultipartUploadResult><ETag>\"abc-3\"</ETag></CompleteMultipartUploadResult>",
        "<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>",
        "<a><![CDATA[<b>]]></a>", "<!DOCTYPE x [<!ENTITY e \"&#60;\">]><x>&e;</x>",
        // Inputs that crashed Foundation's XMLParser before S3XMLElement screened them (regression seeds).
        "<?xml?><Err version=\"F-8\"?><Error><Code>SignatureDoesNotMatch</Code></Error>", "<?XML?><b/>", "<a><?xml?></a>",
        "<?xm?><Error><Code>SlowDown</Code></Error>", "<Error><?pi?><Code>SlowDown</Code></Error>",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?4258><Error><Code>Slow</Code></Error>><?pi?><Code>x</Code>",
    ].map { Array($0.utf8) } + [
        Array("<Er2or><Co".utf8) + [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF] + Array("t>x</Co></Er2or>".utf8),
        Array("<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToke".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]
            + Array("eGcx=</NextContinuationToken></ListBucketResult>".utf8),
    ]

    @Test func xmlAnswers() {
        var fuzzer = Fuzzer("s3-xml", seeds: Self.xmlSeeds, rounds: 15_000)
        let runs = fuzzer.run { bytes in
            let data = Data(bytes)
            if let root = S3XMLElement.parse(data) {
                _ = root.all("Contents").compactMap { $0.value("Key") }.map { S3URIEncoding.decode($0, plusIsSpace: true) }
            }
            let error = S3ErrorResponse(status: 403, body: data)
            _ = error.destinationError("fuzz").message
            _ = S3DeleteResult(data, display: { $0 })
        }
        #expect(runs > 15_000)
    }

    @Test func urlEncodedKeysRoundTrip() {
        var fuzzer = Fuzzer("s3-keys", seeds: [Array("a b+c%2F%zz%".utf8), Array("ü/日本/😀".utf8), []], rounds: 4000)
        fuzzer.run { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            _ = S3URIEncoding.decode(text, plusIsSpace: true)
            // Whatever the key, encoding then decoding gives it back, and the encoding is plain ASCII.
            let encoded = S3URIEncoding.encode(text, keepSlash: true)
            #expect(S3URIEncoding.decode(encoded) == text)
            #expect(encoded.utf8.allSatisfy { $0 < 0x80 })
        }
    }
}
