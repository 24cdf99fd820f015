-- Schema and seed of the feed that every rttlab app serves (apps/README.md).
-- Run in the rttlab database as the rttlab role, which then owns every object.
-- The data are fixed: the same ids, titles and feedback counts on every build.

CREATE TABLE accounts (
    id   serial PRIMARY KEY,
    name text NOT NULL UNIQUE
);

CREATE TABLE articles (
    id         serial PRIMARY KEY,
    account_id int NOT NULL REFERENCES accounts (id),
    title      text NOT NULL,
    body       text NOT NULL
);
CREATE INDEX articles_account_id_idx ON articles (account_id);

CREATE TABLE feedback (
    id         serial PRIMARY KEY,
    article_id int NOT NULL REFERENCES articles (id),
    body       text NOT NULL
);
CREATE INDEX feedback_article_id_idx ON feedback (article_id);

-- One reader account.
INSERT INTO accounts (name) VALUES ('reader');

-- Ten articles for the reader, ids 1..10.
INSERT INTO articles (account_id, title, body)
SELECT a.id,
       'Article ' || g,
       'Body of article ' || g || '. ' || repeat('Lorem ipsum dolor sit amet. ', 8)
FROM accounts a, generate_series(1, 10) AS g
WHERE a.name = 'reader'
ORDER BY g;

-- Between 3 and 7 feedback rows per article: article i gets 3 + (7*i mod 5),
-- so articles 1..10 get 5, 7, 4, 6, 3, 5, 7, 4, 6, 3 rows (50 in all).
INSERT INTO feedback (article_id, body)
SELECT ar.id, 'Feedback ' || k || ' on article ' || ar.id
FROM articles ar,
     LATERAL generate_series(1, 3 + (7 * ar.id) % 5) AS k
ORDER BY ar.id, k;
