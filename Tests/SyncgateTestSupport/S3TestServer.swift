import Foundation

/// A moto S3 server on a free loopback port, started by a test and stopped by it (``stop()``, also on failure:
/// call it from a `defer`). With `auth: true` signature checking is switched on: an IAM user with an `s3:*`
/// policy and an access key are created through moto's IAM API, then `/moto-api/reset-auth` turns checking on.
/// Reads back go through boto3 (an independent client), run by `python3`.
public final class S3TestServer: @unchecked Sendable {
    public let port: Int
    public let logFile: URL
    public private(set) var accessKeyID: String
    public private(set) var secretAccessKey: String
    /// With `writeOnlyUser: true`: the keys of a second IAM user allowed `s3:PutObject` and nothing else.
    public private(set) var writeOnlyAccessKeyID: String?
    public private(set) var writeOnlySecretAccessKey: String?
    /// With signature checking on: a role the main user may assume (`sts:AssumeRole`), allowed `s3:*`, and any
    /// principal may assume.
    public private(set) var roleARN: String?
    /// With signature checking on: the keys of a user allowed `sts:AssumeRole` and nothing else (no S3 request of
    /// its own goes through), for a profile that assumes ``roleARN``.
    public private(set) var assumerAccessKeyID: String?
    public private(set) var assumerSecretAccessKey: String?
    private var process: ChildProcess?
    private let python: URL
    /// Variables moto is started with, besides the test's own.
    private let serverEnvironment: [String: String]

    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Why moto cannot be used here, or nil when it can.
    public static let unavailableReason: String? = {
        guard ProcessRunner.which("python3") != nil else { return "python3 is not installed (run scripts/test-deps)" }
        if !ProcessRunner.pythonHas(["moto", "boto3", "werkzeug", "flask"]) {
            return "moto[server] and boto3 are not installed for python3 (run scripts/test-deps)"
        }
        return nil
    }()

    /// Starts moto on `port` (a free one by default) and waits (at most 30 s) until it listens. With
    /// `pathStyleOnly`, moto takes the bucket from the path whatever the Host header says (it would otherwise read
    /// `s3.syncgate.test` as the bucket `s3` of a virtual-hosted request), for tests that reach it by a made-up name.
    public init(port: Int? = nil, auth: Bool = true, buckets: [String] = [], writeOnlyUser: Bool = false, pathStyleOnly: Bool = false) async throws {
        guard let python = ProcessRunner.which("python3") else { throw S3TestServerError("python3 not found") }
        self.python = python
        self.serverEnvironment = pathStyleOnly ? ["S3_IGNORE_SUBDOMAIN_BUCKETNAME": "true"] : [:]
        self.port = port ?? Loopback.freePort()
        self.logFile = try TemporaryDirectory("moto-\(self.port)").file("moto.log")
        self.accessKeyID = "testing"
        self.secretAccessKey = "testing"
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        try await launch()
        do {
            let result = try await helper(
                ["setup", String(self.port), auth ? "1" : "0", writeOnlyUser ? "1" : "0"] + buckets, credentials: false)
            let answer = try JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: String] ?? [:]
            if let id = answer["access_key_id"], let secret = answer["secret_access_key"] {
                accessKeyID = id
                secretAccessKey = secret
            }
            roleARN = answer["role_arn"]
            assumerAccessKeyID = answer["assumer_access_key_id"]
            assumerSecretAccessKey = answer["assumer_secret_access_key"]
            writeOnlyAccessKeyID = answer["writer_access_key_id"]
            writeOnlySecretAccessKey = answer["writer_secret_access_key"]
        } catch {
            stop()
            throw error
        }
    }

    private func launch() async throws {
        let script = "from moto.server import main; import sys; sys.argv=['moto_server','-H','127.0.0.1','-p','\(port)']; main()"
        process = try ProcessRunner.start(python, ["-c", script], environment: serverEnvironment.merging(["PYTHONUNBUFFERED": "1"]) { $1 }, logFile: logFile)
        // (Still running once something listens: the listener is this moto, not another program on the port.)
        let started = process
        guard await Loopback.waitForListener(port: port, timeout: 90, while: { started?.isRunning == true }),
            process?.isRunning == true
        else {
            let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            stop()
            throw S3TestServerError("moto exited or did not listen on 127.0.0.1:\(port) within 90 s: \(log.suffix(500))")
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s), waits for it to exit and removes its log. Idempotent.
    public func stop() {
        terminate()
        try? FileManager.default.removeItem(at: logFile.deletingLastPathComponent())
    }

    private func terminate() {
        guard let process else { return }
        self.process = nil
        ProcessRunner.stop(process)
    }

    deinit { stop() }

    /// The server's log so far (werkzeug prints one line per request: `"PUT /bucket/key HTTP/1.1" 200 -`).
    public func log() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Request lines of the log with this method (`PUT`, `GET`, `HEAD`, `POST`, `DELETE`).
    public func requests(_ method: String) -> [String] {
        log().split(separator: "\n").map(String.init).filter { $0.contains("\"\(method) /") }
    }

    /// One object as boto3 reads it back.
    public struct StoredObject: Sendable {
        public var key: String
        public var size: Int64
        public var data: Data
        public var metadata: [String: String]
    }

    /// Every object of `bucket`, downloaded with boto3 (files under `folder`, one per object).
    public func objects(bucket: String, into folder: URL) async throws -> [String: StoredObject] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let text = try await helper(["dump", String(port), bucket, folder.path])
        guard let list = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else {
            throw S3TestServerError("unreadable dump: \(text.prefix(300))")
        }
        var result: [String: StoredObject] = [:]
        for entry in list {
            guard let key = entry["key"] as? String, let file = entry["file"] as? String else { continue }
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            result[key] = StoredObject(
                key: key, size: (entry["size"] as? NSNumber)?.int64Value ?? -1, data: data,
                metadata: entry["metadata"] as? [String: String] ?? [:])
        }
        return result
    }

    /// What boto3 reads of an object besides its bytes: HeadObject's headers, its tags and its ACL grants.
    public struct ObjectDescription: Sendable {
        public var contentType: String?
        public var cacheControl: String?
        public var serverSideEncryption: String?
        public var kmsKeyID: String?
        public var tags: [String: String]
        /// `grantee URI or id: permission`, one per grant.
        public var grants: [String]
    }

    public func describe(bucket: String, key: String) async throws -> ObjectDescription {
        let text = try await helper(["describe", String(port), bucket, key])
        guard let entry = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw S3TestServerError("unreadable description: \(text.prefix(300))")
        }
        return ObjectDescription(
            contentType: entry["content_type"] as? String, cacheControl: entry["cache_control"] as? String,
            serverSideEncryption: entry["sse"] as? String, kmsKeyID: entry["kms_key_id"] as? String,
            tags: entry["tags"] as? [String: String] ?? [:], grants: entry["grants"] as? [String] ?? [])
    }

    /// Temporary credentials of ``roleARN`` from moto's STS (AssumeRole, signed as the main user), as the AWS
    /// credential endpoints hand them out: AccessKeyId, SecretAccessKey, Token, Expiration (ISO 8601).
    public func assumeRole(seconds: Int = 3600) async throws -> [String: String] {
        guard let roleARN else { throw S3TestServerError("no role: start the server with auth: true") }
        let text = try await helper(["assume", String(port), roleARN, String(seconds)])
        return (try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]) ?? [:]
    }

    /// Lets the next `count` requests through without a signature (moto's `/moto-api/reset-auth` with that count),
    /// then checks signatures again. moto, unlike AWS, refuses an unsigned STS AssumeRoleWithWebIdentity when
    /// checking is on; a test of web identity lets exactly that first request through.
    public func allowUnsignedRequests(_ count: Int) throws {
        _ = try LoopbackHTTP.request(port: port, "POST", "/moto-api/reset-auth", body: Data(String(count).utf8))
    }

    /// The SHA-256 (hex) and size of an object, read back with boto3 in 1 MiB chunks (for objects too large to hold).
    public func digest(bucket: String, key: String) async throws -> (sha256: String, size: Int64) {
        let text = try await helper(["sha256", String(port), bucket, key])
        let answer = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
        return ((answer["sha256"] as? String) ?? "", (answer["size"] as? NSNumber)?.int64Value ?? -1)
    }

    /// Starts a multipart upload of `key` with boto3 and sends one 5 MiB part, never completing it (what a client that
    /// died leaves behind). Returns its upload id.
    public func startUnfinishedUpload(bucket: String, key: String) async throws -> String {
        try await helper(["unfinished", String(port), bucket, key]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Multipart uploads still open in `bucket` (orphans, if any).
    public func openMultipartUploads(bucket: String) async throws -> Int {
        Int(try await helper(["uploads", String(port), bucket]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Puts an object with boto3 (an object another tool wrote), with these `x-amz-meta-*` values, as a multipart
    /// upload of `partSize` parts when given (boto3's own part size otherwise, and one PUT below it).
    public func put(bucket: String, key: String, file: URL, metadata: [String: String] = [:], partSize: Int? = nil) async throws {
        var options: [String: Any] = ["metadata": metadata]
        if let partSize { options["part_size"] = partSize }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: options), as: UTF8.self)
        _ = try await helper(["put", String(port), bucket, key, file.path, json])
    }

    /// Deletes an object with boto3 (what a lifecycle rule or another tool does behind syncgate's back).
    public func delete(bucket: String, key: String) async throws {
        _ = try await helper(["delete", String(port), bucket, key])
    }

    private func helper(_ arguments: [String], credentials: Bool = true) async throws -> String {
        var environment = ["AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"]
        environment["AWS_ACCESS_KEY_ID"] = credentials ? accessKeyID : "testing"
        environment["AWS_SECRET_ACCESS_KEY"] = credentials ? secretAccessKey : "testing"
        // A dump of a few thousand objects takes seconds when the machine is quiet; beside `stress-ng --cpu 4` one took
        // longer than 120 s. The bound only catches a hang.
        let result = try await ProcessRunner.run(python, ["-c", S3TestServer.script] + arguments, environment: environment, timeout: 600)
        guard result.status == 0 else {
            throw S3TestServerError("boto3 helper \(arguments.first ?? "") failed (\(result.status)): \(result.stderr.suffix(1500))")
        }
        return result.stdout
    }

    static let script = #"""
import json, os, sys, urllib.request
import boto3
from botocore.config import Config

cmd, port = sys.argv[1], sys.argv[2]
url = "http://127.0.0.1:%s" % port
def client(service):
    return boto3.client(service, endpoint_url=url, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

if cmd == "setup":
    auth = sys.argv[3] == "1"
    writer = sys.argv[4] == "1"
    s3 = client("s3")
    for bucket in sys.argv[5:]:
        s3.create_bucket(Bucket=bucket)
    answer = {}
    if writer:
        iam = client("iam")
        iam.create_user(UserName="writer")
        iam.put_user_policy(UserName="writer", PolicyName="put-only", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": "*"}]}))
        key = iam.create_access_key(UserName="writer")["AccessKey"]
        answer.update({"writer_access_key_id": key["AccessKeyId"], "writer_secret_access_key": key["SecretAccessKey"]})
    if auth:
        iam = client("iam")
        iam.create_user(UserName="syncgate")
        iam.put_user_policy(UserName="syncgate", PolicyName="s3-all", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:*", "sts:AssumeRole"], "Resource": "*"}]}))
        key = iam.create_access_key(UserName="syncgate")["AccessKey"]
        answer.update({"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]})
        role = iam.create_role(RoleName="syncgate-uploader", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:*"}]}))["Role"]
        iam.put_role_policy(RoleName="syncgate-uploader", PolicyName="s3-all", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": "*"}]}))
        answer["role_arn"] = role["Arn"]
        iam.create_user(UserName="assumer")
        iam.put_user_policy(UserName="assumer", PolicyName="assume-only", PolicyDocument=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": ["sts:AssumeRole"], "Resource": "*"}]}))
        key = iam.create_access_key(UserName="assumer")["AccessKey"]
        answer.update({"assumer_access_key_id": key["AccessKeyId"], "assumer_secret_access_key": key["SecretAccessKey"]})
        request = urllib.request.Request(url + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=30).read()
    print(json.dumps(answer))
elif cmd == "dump":
    bucket, folder = sys.argv[3], sys.argv[4]
    s3 = client("s3")
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            path = os.path.join(folder, "obj-%d" % len(out))
            answer = s3.get_object(Bucket=bucket, Key=item["Key"])
            with open(path, "wb") as f:
                for chunk in answer["Body"].iter_chunks(1 << 20):
                    f.write(chunk)
            out.append({"key": item["Key"], "size": item["Size"], "file": path,
                        "metadata": answer.get("Metadata", {})})
    print(json.dumps(out))
elif cmd == "describe":
    s3 = client("s3")
    bucket, key = sys.argv[3], sys.argv[4]
    head = s3.head_object(Bucket=bucket, Key=key)
    tags = s3.get_object_tagging(Bucket=bucket, Key=key).get("TagSet", [])
    acl = s3.get_object_acl(Bucket=bucket, Key=key).get("Grants", [])
    grants = ["%s: %s" % (g["Grantee"].get("URI") or g["Grantee"].get("ID") or "?", g["Permission"]) for g in acl]
    print(json.dumps({"content_type": head.get("ContentType"), "cache_control": head.get("CacheControl"),
                      "sse": head.get("ServerSideEncryption"), "kms_key_id": head.get("SSEKMSKeyId"),
                      "tags": {t["Key"]: t["Value"] for t in tags}, "grants": grants}))
elif cmd == "assume":
    c = client("sts").assume_role(RoleArn=sys.argv[3], RoleSessionName="syncgate-test", DurationSeconds=int(sys.argv[4]))["Credentials"]
    print(json.dumps({"AccessKeyId": c["AccessKeyId"], "SecretAccessKey": c["SecretAccessKey"], "Token": c["SessionToken"],
                      "Expiration": c["Expiration"].strftime("%Y-%m-%dT%H:%M:%SZ")}))
elif cmd == "sha256":
    import hashlib
    digest = hashlib.sha256()
    answer = client("s3").get_object(Bucket=sys.argv[3], Key=sys.argv[4])
    for chunk in answer["Body"].iter_chunks(1 << 20):
        digest.update(chunk)
    print(json.dumps({"sha256": digest.hexdigest(), "size": answer["ContentLength"]}))
elif cmd == "unfinished":
    s3 = client("s3")
    upload = s3.create_multipart_upload(Bucket=sys.argv[3], Key=sys.argv[4])["UploadId"]
    s3.upload_part(Bucket=sys.argv[3], Key=sys.argv[4], UploadId=upload, PartNumber=1, Body=b"x" * (5 << 20))
    print(upload)
elif cmd == "uploads":
    s3 = client("s3")
    print(len(s3.list_multipart_uploads(Bucket=sys.argv[3]).get("Uploads", [])))
elif cmd == "delete":
    client("s3").delete_object(Bucket=sys.argv[3], Key=sys.argv[4])
    print("ok")
elif cmd == "put":
    from boto3.s3.transfer import TransferConfig
    s3 = client("s3")
    options = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    extra = {"Metadata": options.get("metadata", {})}
    if "part_size" in options:
        size = options["part_size"]
        config = TransferConfig(multipart_threshold=size, multipart_chunksize=size, use_threads=False)
        s3.upload_file(sys.argv[5], sys.argv[3], sys.argv[4], ExtraArgs=extra, Config=config)
    else:
        with open(sys.argv[5], "rb") as f:
            s3.put_object(Bucket=sys.argv[3], Key=sys.argv[4], Body=f, **extra)
    print("ok")
"""#
}

public struct S3TestServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
