import Foundation
import SyncgateCore
import Testing
@testable import SyncgateS3

/// Parsing of S3's XML answers (shapes as in the S3 API reference).
@Suite("S3 XML answers")
struct S3XMLTests {
    @Test func listBucketResultWithNamespace() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>bucket</Name><Prefix>out%2F</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>
              <EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>
              <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
              <Contents><Key>out/a+b%2Bc%26d.txt</Key><Size>5</Size><ETag>&quot;abc&quot;</ETag></Contents>
              <Contents><Key>out/%E6%97%A5.bin</Key><Size>0</Size></Contents>
            </ListBucketResult>
            """
        let root = try #require(S3XMLElement.parse(Data(xml.utf8)))
        #expect(root.name == "ListBucketResult")
        #expect(root.value("NextContinuationToken") == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        let keys = root.all("Contents").compactMap { $0.value("Key") }.map { S3URIEncoding.decode($0, plusIsSpace: true) }
        #expect(keys == ["out/a b+c&d.txt", "out/日.bin"])
        #expect(root.all("Contents").first?.value("ETag") == "\"abc\"")
        #expect(S3XMLElement.parse(Data("not xml <".utf8)) == nil)
    }

    @Test func deleteResultReportsEachKeysError() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Deleted><Key>gone.txt</Key></Deleted>
              <Error><Key>locked.txt</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>
              <Error><Key>busy &amp; slow.txt</Key><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>
            </DeleteResult>
            """
        let result = try #require(S3DeleteResult(Data(xml.utf8), display: { "s3://b/\($0)" }))
        #expect(Set(result.failures.keys) == ["locked.txt", "busy & slow.txt"])
        #expect(result.failures["locked.txt"]?.code == "AccessDenied")
        #expect(result.failures["locked.txt"]?.failureClass == .permanent)
        #expect(result.failures["locked.txt"]?.message.contains("DeleteObjects s3://b/locked.txt") == true)
        #expect(result.failures["busy & slow.txt"]?.failureClass.isRetryable == true)
        #expect(S3DeleteResult(Data("<Error><Code>X</Code></Error>".utf8), display: { $0 }) == nil)
    }

    @Test func escapesKeysForRequestBodies() {
        #expect(S3XMLEscape.escape("a<b>&'\"c") == "a&lt;b&gt;&amp;&apos;&quot;c")
    }

    @Test func retryAfterSecondsAndHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(S3Client.retryAfter("120", now: now) == .seconds(120))
        #expect(S3Client.retryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == .seconds(30))
        #expect(S3Client.retryAfter("soon", now: now) == nil)
    }

    /// Inputs that crash Foundation's XMLParser on Linux are refused before they reach it.
    @Test func refusesWhatCrashesFoundationsParser() {
        let hostile: [Data] = [
            Data("<?XML?><b/>".utf8), Data("<a><?xml?></a>".utf8),
            Data("<Er2or><Co".utf8) + Data([0, 0, 0xFF, 0xFF]) + Data("t>x</Co></Er2or>".utf8),
            Data("<!DOCTYPE x [<!ENTITY e \"boom\">]><x>&e;</x>".utf8),
        ]
        for data in hostile { #expect(S3XMLElement.parse(data) == nil) }
        // A broken leading declaration is dropped, not handed to the parser.
        #expect(S3XMLElement.parse(Data("<?xml?><Error><Code>X</Code></Error>".utf8))?.value("Code") == "X")
        // A normal answer with its declaration and a byte-order mark still parses.
        let normal = Data([0xEF, 0xBB, 0xBF]) + Data("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code></Error>".utf8)
        #expect(S3XMLElement.parse(normal)?.value("Code") == "NoSuchKey")
    }
}
