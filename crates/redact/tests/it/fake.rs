//! The planted secrets: realistic, clearly fake credentials of every rule family, each in the
//! prose, JSON or terminal output it would come in.
//!
//! The values are drawn at run time from a seeded generator with each format's prefix, length
//! and alphabet, so no credential-shaped string sits in the source (secret scanners and push
//! protection see nothing) and none is anyone's real credential.

/// splitmix64: a small deterministic generator.
pub(crate) struct Rng(u64);

pub(crate) const UPPER_B32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub(crate) const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(crate) const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
pub(crate) const HEX: &str = "0123456789abcdef";
pub(crate) const DIGITS: &str = "0123456789";
pub(crate) const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub(crate) const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` characters drawn from `alphabet`, the first and the last alphanumeric (a token's
    /// edges are word characters).
    pub(crate) fn word(&mut self, alphabet: &str, n: usize) -> String {
        let mut out = self.pick(ALNUM, 1);
        out.push_str(&self.pick(alphabet, n.saturating_sub(2)));
        out.push_str(&self.pick(ALNUM, 1));
        out
    }

    /// `n` characters drawn from `alphabet`.
    pub(crate) fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n).map(|_| chars[(self.next() % chars.len() as u64) as usize]).collect()
    }
}

/// A PEM block of `kind` (`RSA PRIVATE KEY`, `EC PRIVATE KEY`, `OPENSSH PRIVATE KEY`,
/// `PRIVATE KEY`), with `lines` lines of base64 and the given line separator.
pub(crate) fn pem(rng: &mut Rng, kind: &str, lines: usize, newline: &str) -> String {
    let mut out = format!("-----BEGIN {kind}-----{newline}");
    for _ in 0..lines {
        out.push_str(&rng.pick(B64, 64));
        out.push_str(newline);
    }
    out.push_str(&rng.pick(B64, 22));
    out.push_str("==");
    out.push_str(newline);
    out.push_str(&format!("-----END {kind}-----"));
    out
}

/// A piece of a planted text.
pub(crate) enum Part {
    /// Surrounding text, kept.
    Text(String),
    /// A secret and the rule that must take it out.
    Secret(&'static str, String),
}

/// Surrounding text.
pub(crate) fn t(text: &str) -> Part {
    Part::Text(text.to_owned())
}

/// A secret and the rule that must take it out.
pub(crate) fn s(rule: &'static str, value: String) -> Part {
    Part::Secret(rule, value)
}

/// One planted text: what goes in, what must come out, and the secrets.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) text: String,
    pub(crate) expected: String,
    pub(crate) secrets: Vec<(&'static str, String)>,
}

fn case(name: &'static str, parts: Vec<Part>) -> Case {
    let mut text = String::new();
    let mut expected = String::new();
    let mut secrets = Vec::new();
    for part in parts {
        match part {
            Part::Text(t) => {
                text.push_str(&t);
                expected.push_str(&t);
            }
            Part::Secret(rule, value) => {
                text.push_str(&value);
                expected.push_str(&format!("[REDACTED:{rule}]"));
                secrets.push((rule, value));
            }
        }
    }
    Case { name, text, expected, secrets }
}

const JWT_HS256: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";
const JWT_RS256: &str = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImsxIn0";
/// `{"sub":"usr_48213","org":"acme","role":"admin","iat":1767225600,"exp":1767229200}`
const JWT_USER: &str = "eyJzdWIiOiJ1c3JfNDgyMTMiLCJvcmciOiJhY21lIiwicm9sZSI6ImFkbWluIiwiaWF0IjoxNzY3MjI1NjAwLCJleHAiOjE3NjcyMjkyMDB9";
/// `{"iss":"https://auth.acme.dev","sub":"svc-billing","aud":"api","exp":1767229200}`
const JWT_SERVICE: &str = "eyJpc3MiOiJodHRwczovL2F1dGguYWNtZS5kZXYiLCJzdWIiOiJzdmMtYmlsbGluZyIsImF1ZCI6ImFwaSIsImV4cCI6MTc2NzIyOTIwMH0";

/// The planted set.
pub(crate) fn planted() -> Vec<Case> {
    let mut r = Rng::new(0x5c71_9701_12ed_ac7e);
    let r = &mut r;
    vec![
        case(
            "aws credentials file",
            vec![
                t(
                    "Here is my ~/.aws/credentials, can you see why boto3 fails?\n\n```\n[default]\naws_access_key_id = ",
                ),
                s("aws-access-token", format!("AKIA{}", r.pick(UPPER_B32, 16))),
                t("\naws_secret_access_key = "),
                s("aws-secret-access-key", r.pick(B64, 40)),
                t("\nregion = eu-west-1\n```\n"),
            ],
        ),
        case(
            "aws sts json",
            vec![
                t(
                    "$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deploy --role-session-name ci\n{\n    \"Credentials\": {\n        \"AccessKeyId\": \"",
                ),
                s("aws-access-token", format!("ASIA{}", r.pick(UPPER_B32, 16))),
                t("\",\n        \"SecretAccessKey\": \""),
                s("aws-secret-access-key", r.pick(B64, 40)),
                t("\",\n        \"Expiration\": \"2026-01-01T00:00:00Z\"\n    }\n}\n"),
            ],
        ),
        case(
            "gcp api key in prose",
            vec![
                t("The Maps call returns REQUEST_DENIED even though the key "),
                s("gcp-api-key", format!("AIza{}", r.word(URLSAFE, 35))),
                t(" has the Geocoding API enabled. Any idea?"),
            ],
        ),
        case(
            "gemini key in env",
            vec![
                t("export GEMINI_API_KEY="),
                s("gcp-api-key", format!("AIza{}", r.word(URLSAFE, 35))),
                t("\npython run_eval.py --model gemini-2.5-pro\n"),
            ],
        ),
        case(
            "gcp service account json",
            vec![
                t(
                    "{\n  \"type\": \"service_account\",\n  \"project_id\": \"acme-analytics\",\n  \"private_key\": \"",
                ),
                s("private-key", pem(r, "PRIVATE KEY", 6, "\\n")),
                t("\\n\",\n  \"client_email\": \"etl@acme-analytics.iam.gserviceaccount.com\"\n}"),
            ],
        ),
        case(
            "azure storage connection string",
            vec![
                t(
                    "AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acmeprodlogs;AccountKey=",
                ),
                s("azure-storage-account-key", format!("{}==", r.pick(B64, 86))),
                t(";EndpointSuffix=core.windows.net\"\n"),
            ],
        ),
        case(
            "azure ad client secret",
            vec![
                t("In the app registration I created a client secret: "),
                s(
                    "azure-ad-client-secret",
                    format!("{}8Q~{}", r.pick(ALNUM, 3), r.pick(ALNUM, 34)),
                ),
                t(" (expires in 180 days). Where do I put it in appsettings.json?"),
            ],
        ),
        case(
            "azure sas url",
            vec![
                t(
                    "curl -O \"https://acmeprodlogs.blob.core.windows.net/exports/2026-01.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-02-01T00:00:00Z&sig=",
                ),
                s("azure-sas-signature", format!("{}%3D", r.pick(ALNUM, 43))),
                t("\"\n"),
            ],
        ),
        case(
            "github classic pat",
            vec![
                t("git remote set-url origin https://github.com/acme/api.git && export GH_TOKEN="),
                s("github-pat", format!("ghp_{}", r.pick(ALNUM, 36))),
                t("\n"),
            ],
        ),
        case(
            "github fine-grained pat",
            vec![
                t("The fine-grained token I made only has contents:read — "),
                s(
                    "github-fine-grained-pat",
                    format!("github_pat_{}_{}", r.pick(ALNUM, 22), r.pick(ALNUM, 59)),
                ),
                t(" — is that enough for the release workflow?"),
            ],
        ),
        case(
            "github oauth token",
            vec![
                t(
                    "gh auth status\n  ✓ Logged in to github.com account octo-dev (keyring)\n  - Token: ",
                ),
                s("github-oauth", format!("gho_{}", r.pick(ALNUM, 36))),
                t("\n"),
            ],
        ),
        case(
            "github app token",
            vec![
                t("The installation token from the app is "),
                s("github-app-token", format!("ghs_{}", r.pick(ALNUM, 36))),
                t(", valid for an hour."),
            ],
        ),
        case(
            "gitlab pat",
            vec![
                t("docker login registry.gitlab.com -u ci-bot -p "),
                s("gitlab-pat", format!("glpat-{}", r.word(URLSAFE, 20))),
                t("\n"),
            ],
        ),
        case(
            "openai project key",
            vec![
                t("$ export OPENAI_API_KEY="),
                s(
                    "openai-api-key",
                    format!("sk-proj-{}T3BlbkFJ{}", r.word(URLSAFE, 74), r.word(URLSAFE, 74)),
                ),
                t("\n$ python -m evals.run --model gpt-4.1\nRunning 120 samples...\n"),
            ],
        ),
        case(
            "anthropic key in json settings",
            vec![
                t("{\n  \"env\": {\n    \"ANTHROPIC_API_KEY\": \""),
                s("anthropic-api-key", format!("sk-ant-api03-{}AA", r.word(URLSAFE, 93))),
                t("\",\n    \"DISABLE_TELEMETRY\": \"1\"\n  }\n}"),
            ],
        ),
        case(
            "anthropic oauth token",
            vec![
                t("CLAUDE_CODE_OAUTH_TOKEN="),
                s("anthropic-oauth-token", format!("sk-ant-oat01-{}AA", r.word(URLSAFE, 93))),
                t(" claude -p \"summarise the diff\"\n"),
            ],
        ),
        case(
            "hugging face token",
            vec![
                t("huggingface-cli login --token "),
                s("huggingface-access-token", format!("hf_{}", r.pick(LETTERS, 34))),
                t(" --add-to-git-credential\n"),
            ],
        ),
        case(
            "groq key",
            vec![
                t("GROQ_API_KEY="),
                s("groq-api-key", format!("gsk_{}", r.pick(ALNUM, 52))),
                t(" in .env.local, and the client still says 401."),
            ],
        ),
        case(
            "perplexity key",
            vec![
                t("client = OpenAI(api_key=\""),
                s("perplexity-api-key", format!("pplx-{}", r.pick(ALNUM, 48))),
                t("\", base_url=\"https://api.perplexity.ai\")"),
            ],
        ),
        case(
            "xai key",
            vec![
                t("I rotated the Grok key to "),
                s("xai-api-key", format!("xai-{}", r.pick(ALNUM, 80))),
                t(" yesterday."),
            ],
        ),
        case(
            "openrouter key",
            vec![
                t("OPENROUTER_API_KEY="),
                s("openrouter-api-key", format!("sk-or-v1-{}", r.pick(HEX, 64))),
                t("\n"),
            ],
        ),
        case(
            "slack bot token",
            vec![
                t("const app = new App({ token: \""),
                s(
                    "slack-bot-token",
                    format!(
                        "xoxb-{}-{}-{}",
                        r.pick(DIGITS, 12),
                        r.pick(DIGITS, 13),
                        r.pick(ALNUM, 24)
                    ),
                ),
                t("\", signingSecret: process.env.SLACK_SIGNING_SECRET });"),
            ],
        ),
        case(
            "slack user token",
            vec![
                t("The user token (xoxp) is "),
                s(
                    "slack-user-token",
                    format!(
                        "xoxp-{}-{}-{}-{}",
                        r.pick(DIGITS, 12),
                        r.pick(DIGITS, 12),
                        r.pick(DIGITS, 13),
                        r.pick(HEX, 32)
                    ),
                ),
                t(", scopes channels:history and chat:write."),
            ],
        ),
        case(
            "slack webhook",
            vec![
                t(
                    "curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"deploy done\"}' ",
                ),
                s(
                    "slack-webhook-url",
                    format!(
                        "https://hooks.slack.com/services/T{}/B{}/{}",
                        r.pick(UPPER_B32, 10),
                        r.pick(UPPER_B32, 10),
                        r.pick(ALNUM, 24)
                    ),
                ),
                t("\n"),
            ],
        ),
        case(
            "stripe live secret key",
            vec![
                t("stripe.api_key = \""),
                s("stripe-access-token", format!("sk_live_{}", r.pick(ALNUM, 99))),
                t("\"\n"),
            ],
        ),
        case(
            "stripe test secret key",
            vec![
                t("For the test suite use "),
                s("stripe-access-token", format!("sk_test_{}", r.pick(ALNUM, 24))),
                t(" and the card 4242 4242 4242 4242."),
            ],
        ),
        case(
            "npm token",
            vec![
                t("cat ~/.npmrc\n//registry.npmjs.org/:_authToken="),
                s("npm-access-token", format!("npm_{}", r.pick(ALNUM, 36))),
                t("\n"),
            ],
        ),
        case(
            "pypi token",
            vec![
                t("[pypi]\n  username = __token__\n  password = "),
                s("pypi-upload-token", format!("pypi-AgEIcHlwaS5vcmc{}", r.word(URLSAFE, 120))),
                t("\n"),
            ],
        ),
        case(
            "rsa private key",
            vec![
                t("Here is the deploy key the old server used:\n\n"),
                s("private-key", pem(r, "RSA PRIVATE KEY", 12, "\n")),
                t("\n\nShould I add it to the new box?"),
            ],
        ),
        case(
            "ec private key",
            vec![
                t("openssl ecparam -name prime256v1 -genkey -noout\n"),
                s("private-key", pem(r, "EC PRIVATE KEY", 2, "\n")),
                t("\n"),
            ],
        ),
        case(
            "openssh private key",
            vec![
                t("cat ~/.ssh/id_ed25519\n"),
                s("private-key", pem(r, "OPENSSH PRIVATE KEY", 5, "\n")),
                t("\ncat ~/.ssh/id_ed25519.pub\n"),
            ],
        ),
        case(
            "jwt bearer",
            vec![
                t("The API answers 403 for this token: "),
                s("jwt", format!("{JWT_HS256}.{JWT_USER}.{}", r.word(URLSAFE, 43))),
                t(" — the role claim says admin, so why?"),
            ],
        ),
        case(
            "jwt in curl header",
            vec![
                t("curl -s https://api.acme.dev/v1/invoices -H \"Authorization: Bearer "),
                s("curl-auth-header", format!("{JWT_RS256}.{JWT_SERVICE}.{}", r.word(URLSAFE, 86))),
                t("\" | jq .\n"),
            ],
        ),
        case(
            "postgres url",
            vec![
                t("DATABASE_URL=postgres://app_user:"),
                s("url-password", r.pick(ALNUM, 18)),
                t("@db.internal.acme.dev:5432/orders?sslmode=require\n"),
            ],
        ),
        case(
            "https basic auth url",
            vec![
                t("git clone https://deploy-bot:"),
                s("url-password", r.pick(ALNUM, 24)),
                t("@git.acme.dev/platform/infra.git\n"),
            ],
        ),
        case(
            "mysql url",
            vec![
                t("SQLALCHEMY_DATABASE_URI = \"mysql+pymysql://reporting:"),
                s("url-password", format!("{}!{}", r.pick(ALNUM, 8), r.pick(ALNUM, 6))),
                t("@10.0.3.17:3306/analytics\"\n"),
            ],
        ),
        case(
            "redis url without user",
            vec![
                t("REDIS_URL=redis://:"),
                s("url-password", r.pick(ALNUM, 20)),
                t("@cache-01:6379/0\n"),
            ],
        ),
        case(
            "jdbc password parameter",
            vec![
                t("spring.datasource.url=jdbc:mysql://db:3306/app?user=app&password="),
                s("url-query-password", r.pick(ALNUM, 16)),
                t("&useSSL=true\n"),
            ],
        ),
        case(
            "ado.net connection string",
            vec![
                t(
                    "\"ConnectionStrings\": { \"Default\": \"Server=tcp:sql.acme.internal,1433;Database=orders;User Id=svc_orders;Password=",
                ),
                s(
                    "connection-string-password",
                    format!("{}#{}!{}", r.pick(ALNUM, 5), r.pick(ALNUM, 4), r.pick(ALNUM, 5)),
                ),
                t(";Encrypt=True;\" }"),
            ],
        ),
        case(
            "generic password assignment",
            vec![
                t("# settings.py\nDB_ENGINE = \"postgresql\"\npassword = \""),
                s(
                    "generic-api-key",
                    format!("{}.{}-{}", r.pick(ALNUM, 8), r.pick(ALNUM, 6), r.pick(ALNUM, 6)),
                ),
                t("\"\nDEBUG = False\n"),
            ],
        ),
        case(
            "generic api_key yaml",
            vec![
                t("datadog:\n  site: datadoghq.eu\n  api_key: \""),
                s("generic-api-key", r.pick(HEX, 32)),
                t("\"\n  logs_enabled: true\n"),
            ],
        ),
        case(
            "generic secret token env",
            vec![
                t("cat .env\nNODE_ENV=production\nSECRET_TOKEN="),
                s("generic-api-key", r.pick(ALNUM, 40)),
                t("\nPORT=8080\n"),
            ],
        ),
        case(
            "twilio api key",
            vec![
                t("TWILIO_API_KEY="),
                s("twilio-api-key", format!("SK{}", r.pick(HEX, 32))),
                t("\n"),
            ],
        ),
        case(
            "sendgrid key",
            vec![
                t("sg = SendGridAPIClient('"),
                s(
                    "sendgrid-api-token",
                    format!("SG.{}.{}", r.word(URLSAFE, 22), r.word(URLSAFE, 43)),
                ),
                t("')\n"),
            ],
        ),
        case(
            "databricks token",
            vec![
                t("databricks configure --token\nToken: "),
                s("databricks-api-token", format!("dapi{}", r.pick(HEX, 32))),
                t("\n"),
            ],
        ),
        case(
            "vault token",
            vec![
                t("export VAULT_TOKEN="),
                s("vault-service-token", format!("hvs.{}", r.word(URLSAFE, 95))),
                t("\nvault kv get secret/app\n"),
            ],
        ),
        case(
            "digitalocean pat",
            vec![
                t("doctl auth init --access-token "),
                s("digitalocean-pat", format!("dop_v1_{}", r.pick(HEX, 64))),
                t("\n"),
            ],
        ),
        case(
            "shopify token",
            vec![
                t("X-Shopify-Access-Token: "),
                s("shopify-access-token", format!("shpat_{}", r.pick(HEX, 32))),
                t("\n"),
            ],
        ),
        case(
            "google oauth client secret",
            vec![
                t(
                    "\"web\": {\"client_id\": \"1234567890-abc.apps.googleusercontent.com\", \"client_secret\": \"",
                ),
                s("gcp-oauth-client-secret", format!("GOCSPX-{}", r.word(URLSAFE, 28))),
                t("\"}"),
            ],
        ),
        case(
            "age secret key",
            vec![
                t("# created: 2026-01-01T10:00:00Z\n# public key: age1qqqqqqqq\n"),
                s(
                    "age-secret-key",
                    format!("AGE-SECRET-KEY-1{}", r.pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
                ),
                t("\n"),
            ],
        ),
    ]
}
