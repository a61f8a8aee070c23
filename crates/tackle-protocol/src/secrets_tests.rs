use super::*;

#[test]
fn keys_are_secret_by_their_words() {
    for key in
        ["api_key", "token", "clientSecret", "DB_PASSWORD", "x-api-key", "Authorization", "credentials"]
    {
        assert!(is_secret_key(key), "{key}");
    }
    for key in
        ["token_env", "tokens_file", "env_allow", "monkey", "keyboard", "model", "user", "max_tokens_name"]
    {
        assert!(!is_secret_key(key), "{key}");
    }
}

#[test]
fn user_info_is_masked_the_host_and_path_are_not() {
    assert_eq!(mask_url("postgres://app:pw@db:5432/app"), format!("postgres://app:{MASK}@db:5432/app"));
    assert_eq!(mask_url("postgres://u:p%40ss@h:5432/db"), format!("postgres://u:{MASK}@h:5432/db"));
    // A lone user may be a token (`https://TOKEN@github.com`).
    assert_eq!(mask_url("https://ghp_abc@github.com/x.git"), format!("https://{MASK}@github.com/x.git"));
    // An `@` in the path is not user info.
    assert_eq!(mask_url("https://h/users/@me"), "https://h/users/@me");
    assert_eq!(mask_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
}

#[test]
fn secret_query_values_are_masked_the_others_kept() {
    assert_eq!(
        mask_url("https://h/mcp?api_key=1&page=2&access_token=3&sig=4"),
        format!("https://h/mcp?api_key={MASK}&page=2&access_token={MASK}&sig={MASK}")
    );
    assert_eq!(mask_url("https://h/x?key=k3y"), format!("https://h/x?key={MASK}"));
    assert_eq!(mask_url("https://h/x?token=t"), format!("https://h/x?token={MASK}"));
    // PostgreSQL's parameters: one word that holds a secret word.
    assert_eq!(
        mask_url("postgres://u@h/db?sslmode=require&password=hunter2&sslpassword=hunter2"),
        format!("postgres://{MASK}@h/db?sslmode=require&password={MASK}&sslpassword={MASK}")
    );
    // A parameter without a value has nothing to hide.
    assert_eq!(mask_url("https://h/x?debug&page=1"), "https://h/x?debug&page=1");
}

#[test]
fn fragments_are_masked_whole() {
    // OAuth's implicit flow returns the token in the fragment; a fragment never reaches a server.
    assert_eq!(mask_url("https://app/cb#access_token=t0k&state=s"), format!("https://app/cb#{MASK}"));
    assert_eq!(mask_url("https://h/v1#frag-canary"), format!("https://h/v1#{MASK}"));
    // A `?` after the `#` is part of the fragment, not a query.
    assert_eq!(mask_url("https://h/#/route?page=1"), format!("https://h/#{MASK}"));
    assert_eq!(mask_url("https://h/x?page=1#"), "https://h/x?page=1#");
}

#[test]
fn text_that_is_not_a_url_is_unchanged() {
    assert_eq!(mask_url("not a url"), "not a url");
    assert_eq!(mask_url("not a url?x=1"), "not a url?x=1");
    assert_eq!(mask_url("://h?token=t"), "://h?token=t");
    assert_eq!(mask_url(""), "");
}
