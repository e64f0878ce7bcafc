// A real OpenID Connect provider on loopback (panva/oidc-provider, OpenID-certified) for the
// sign-in tests and `make run-team`. Its development login form accepts any user name listed
// in OIDC_USERS (password: anything); the claims come from that list.
//
//   PORT=9400 OIDC_REDIRECT_URIS=http://localhost:8501/oauth2callback \
//   OIDC_USERS='{"ada":{"email":"ada@example.org","name":"Ada","groups":["founders"]}}' \
//   node tests/oidc/provider.mjs
import Provider from "oidc-provider";

const port = Number(process.env.PORT || 9400);
const issuer = process.env.OIDC_ISSUER || `http://127.0.0.1:${port}`;
const users = JSON.parse(process.env.OIDC_USERS || "{}");
const redirects = (process.env.OIDC_REDIRECT_URIS || "http://localhost:8501/oauth2callback")
  .split(",")
  .filter(Boolean);

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.OIDC_CLIENT_ID || "haytham",
      client_secret: process.env.OIDC_CLIENT_SECRET || "haytham-local-secret",
      redirect_uris: redirects,
      post_logout_redirect_uris: redirects.map((u) => u.replace(/\/oauth2callback$/, "/")),
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
  ],
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name"],
    groups: ["groups"],
  },
  scopes: ["openid", "email", "profile", "groups", "offline_access"],
  conformIdTokenClaims: false, // the ID token carries the claims (Streamlit's st.user reads it)
  async findAccount(ctx, id) {
    const user = users[id];
    if (!user) return undefined; // an unknown name cannot sign in
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          email: user.email,
          email_verified: true,
          name: user.name || id,
          groups: user.groups || [],
        };
      },
    };
  },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: [process.env.OIDC_COOKIE_KEY || "haytham-local-cookie-key"] },
});
provider.proxy = false;
provider.listen(port, "127.0.0.1", () => {
  console.log(`oidc-provider ready on ${issuer}`);
});
