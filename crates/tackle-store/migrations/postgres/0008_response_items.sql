-- PostgreSQL dialect of ../0010_response_items.sql: the same table, columns and indexes.
-- The output items of stored responses (messages, function calls, reasoning), by the id the
-- response gave them, so a later request can name one as {"type": "item_reference", "id": ...}
-- instead of resending it (what OpenAI's SDKs do while store is true). Items belong to the owner
-- of their response and go when it expires.
CREATE TABLE response_items (
    owner       TEXT NOT NULL,
    id          TEXT NOT NULL,
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    item        TEXT NOT NULL,
    PRIMARY KEY (owner, id)
);
CREATE INDEX response_items_response ON response_items (response_id);
