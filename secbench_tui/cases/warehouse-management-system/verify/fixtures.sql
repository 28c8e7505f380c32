-- warehouse-management-system: the SPEC's schema and seed rows for --verify.
CREATE TABLE companies (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id              bigserial PRIMARY KEY,
  email           text NOT NULL UNIQUE,
  full_name       text NOT NULL,
  phone           text,
  password_hash   text NOT NULL,
  mfa_secret      text,
  api_token_hash  text,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE facilities (
  id               bigserial PRIMARY KEY,
  company_id       bigint NOT NULL REFERENCES companies(id),
  code             text NOT NULL,
  name             text NOT NULL,
  address          text,
  timezone         text NOT NULL,
  carrier_api_key  text,            -- credential for the parcel carrier account
  deleted_at       timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, code)
);

CREATE TABLE facility_memberships (
  id           bigserial PRIMARY KEY,
  facility_id  bigint NOT NULL REFERENCES facilities(id),
  user_id      bigint NOT NULL REFERENCES users(id),
  role         text NOT NULL CHECK (role IN ('viewer','picker','clerk','supervisor','manager')),
  granted_by   bigint REFERENCES users(id),
  expires_at   timestamptz,          -- NULL = no expiry
  revoked_at   timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (facility_id, user_id)
);

CREATE TABLE items (                 -- company-wide item catalog
  id            bigserial PRIMARY KEY,
  company_id    bigint NOT NULL REFERENCES companies(id),
  sku           text NOT NULL,
  name          text NOT NULL,
  description   text,
  unit_cost     numeric(12,2),
  weight_kg     numeric(10,3),
  hazmat_class  text,
  deleted_at    timestamptz,
  UNIQUE (company_id, sku)
);

CREATE TABLE bins (
  id           bigserial PRIMARY KEY,
  facility_id  bigint NOT NULL REFERENCES facilities(id),
  code         text NOT NULL,
  zone         text NOT NULL,
  bin_type     text NOT NULL,
  is_blocked   boolean NOT NULL DEFAULT false,
  deleted_at   timestamptz,
  UNIQUE (facility_id, code)
);

CREATE TABLE stock_levels (
  facility_id   bigint NOT NULL REFERENCES facilities(id),
  bin_id        bigint NOT NULL REFERENCES bins(id),
  item_id       bigint NOT NULL REFERENCES items(id),
  qty_on_hand   integer NOT NULL,
  qty_reserved  integer NOT NULL DEFAULT 0,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (bin_id, item_id)
);

CREATE TABLE stock_moves (
  id           bigserial PRIMARY KEY,
  facility_id  bigint NOT NULL REFERENCES facilities(id),
  item_id      bigint NOT NULL REFERENCES items(id),
  from_bin_id  bigint REFERENCES bins(id),
  to_bin_id    bigint REFERENCES bins(id),
  qty          integer NOT NULL CHECK (qty > 0),
  reason       text NOT NULL,
  status       text NOT NULL CHECK (status IN ('draft','posted','cancelled')),
  created_by   bigint NOT NULL REFERENCES users(id),
  posted_by    bigint REFERENCES users(id),
  posted_at    timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE shipments (
  id               bigserial PRIMARY KEY,
  facility_id      bigint NOT NULL REFERENCES facilities(id),
  order_ref        text NOT NULL,
  customer_name    text NOT NULL,
  ship_to_address  text NOT NULL,
  carrier          text,
  tracking_number  text,
  status           text NOT NULL CHECK (status IN ('draft','packed','shipped','delivered','cancelled')),
  created_by       bigint NOT NULL REFERENCES users(id),
  shipped_by       bigint REFERENCES users(id),
  shipped_at       timestamptz,
  deleted_at       timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pick_lists (
  id           bigserial PRIMARY KEY,
  facility_id  bigint NOT NULL REFERENCES facilities(id),
  shipment_id  bigint REFERENCES shipments(id),
  status       text NOT NULL CHECK (status IN ('open','assigned','picking','picked','cancelled')),
  priority     integer NOT NULL DEFAULT 0,
  assigned_to  bigint REFERENCES users(id),
  created_by   bigint NOT NULL REFERENCES users(id),
  deleted_at   timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pick_lines (
  id             bigserial PRIMARY KEY,
  pick_list_id   bigint NOT NULL REFERENCES pick_lists(id),
  item_id        bigint NOT NULL REFERENCES items(id),
  bin_id         bigint NOT NULL REFERENCES bins(id),
  qty_requested  integer NOT NULL,
  qty_picked     integer NOT NULL DEFAULT 0,
  picked_by      bigint REFERENCES users(id),
  picked_at      timestamptz
);

CREATE TABLE cycle_counts (
  id           bigserial PRIMARY KEY,
  facility_id  bigint NOT NULL REFERENCES facilities(id),
  bin_id       bigint NOT NULL REFERENCES bins(id),
  status       text NOT NULL CHECK (status IN ('open','submitted','closed')),
  counted_by   bigint REFERENCES users(id),
  created_by   bigint NOT NULL REFERENCES users(id),
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE count_adjustments (
  id              bigserial PRIMARY KEY,
  cycle_count_id  bigint NOT NULL REFERENCES cycle_counts(id),
  facility_id     bigint NOT NULL REFERENCES facilities(id),
  bin_id          bigint NOT NULL REFERENCES bins(id),
  item_id         bigint NOT NULL REFERENCES items(id),
  expected_qty    integer NOT NULL,
  counted_qty     integer NOT NULL,
  status          text NOT NULL CHECK (status IN ('pending','approved','rejected')),
  requested_by    bigint NOT NULL REFERENCES users(id),
  decided_by      bigint REFERENCES users(id),
  decided_at      timestamptz,
  decision_note   text,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_log (
  id             bigserial PRIMARY KEY,
  company_id     bigint NOT NULL REFERENCES companies(id),
  facility_id    bigint REFERENCES facilities(id),
  actor_user_id  bigint REFERENCES users(id),
  action         text NOT NULL,
  entity_type    text NOT NULL,
  entity_id      bigint,
  details        jsonb,
  created_at     timestamptz NOT NULL DEFAULT now()
);

-- Seed rows. Company 1 is the caller's in most parameter sets, company 2 the other tenant.
-- Facilities: 1 and 2 (company 1), 3 (company 2), 4 (company 1, deleted).
-- Users: 1 Mia manager F1+F2, 2 Sam supervisor F1+F2, 3 Cal clerk F1, 4 Pip picker F1 (and F3),
-- 5 Vic viewer F1, 6 Pia picker F1, 7 Lou clerk F1 and supervisor F3 (a 3PL user of both
-- companies), 8 Eve clerk F1 expired, 9 Rex manager F1 revoked, 10 Ben manager F3, 11 Paz picker F2;
-- F2 also has 120 viewers (users 1001-1120) for page-size checks.
-- Secrets carry markers (PWHASH-, MFASECRET-, APITOKEN-, CARRIERKEY-) that properties look for.
INSERT INTO companies (id, name) VALUES (1, 'Alpha Logistics'), (2, 'Beta Freight');
INSERT INTO users (id, email, full_name, password_hash, mfa_secret, api_token_hash)
SELECT id, lower(name) || '@wms.example', name || ' ' || role, 'PWHASH-' || name, 'MFASECRET-' || name, 'APITOKEN-' || name
FROM (VALUES (1, 'Mia', 'Manager'), (2, 'Sam', 'Supervisor'), (3, 'Cal', 'Clerk'), (4, 'Pip', 'Picker'),
             (5, 'Vic', 'Viewer'), (6, 'Pia', 'Picker'), (7, 'Lou', 'Thirdparty'), (8, 'Eve', 'Expired'),
             (9, 'Rex', 'Revoked'), (10, 'Ben', 'Manager'), (11, 'Paz', 'Picker'), (12, 'Exa', 'Expired'),
             (13, 'Tia', 'Thirdparty'), (14, 'Max', 'Many'), (15, 'Kim', 'Clerk'), (16, 'Lee', 'Manager')) AS v(id, name, role);
INSERT INTO users (id, email, full_name, password_hash)
SELECT 1000 + n, 'temp' || n || '@wms.example', 'Temp Viewer ' || lpad(n::text, 3, '0'), 'PWHASH-temp'
FROM generate_series(1, 120) n;
INSERT INTO facilities (id, company_id, code, name, timezone, carrier_api_key, deleted_at) VALUES
  (1, 1, 'F1', 'Alpha North', 'UTC', 'CARRIERKEY-1', NULL),
  (2, 1, 'F2', 'Alpha South', 'UTC', 'CARRIERKEY-2', NULL),
  (3, 2, 'F3', 'Beta Hub', 'UTC', 'CARRIERKEY-3', NULL),
  (4, 1, 'F4', 'Alpha Closed', 'UTC', 'CARRIERKEY-4', now() - interval '1 day');
INSERT INTO facility_memberships (id, facility_id, user_id, role, expires_at, revoked_at) VALUES
  (1, 1, 1, 'manager', NULL, NULL), (2, 1, 2, 'supervisor', NULL, NULL), (3, 1, 3, 'clerk', now() + interval '30 days', NULL),
  (4, 1, 4, 'picker', NULL, NULL), (5, 1, 5, 'viewer', NULL, NULL), (6, 1, 6, 'picker', NULL, NULL),
  (7, 1, 7, 'clerk', NULL, NULL), (8, 3, 7, 'supervisor', NULL, NULL),
  (9, 1, 8, 'clerk', now() - interval '1 day', NULL), (10, 1, 9, 'manager', NULL, now() - interval '1 day'),
  (11, 3, 10, 'manager', NULL, NULL), (12, 2, 11, 'picker', NULL, NULL), (13, 2, 1, 'manager', NULL, NULL),
  (14, 4, 1, 'manager', NULL, NULL), (15, 2, 2, 'supervisor', NULL, NULL), (16, 3, 4, 'picker', NULL, NULL);
INSERT INTO facility_memberships (id, facility_id, user_id, role)
SELECT 1000 + n, 2, 1000 + n, 'viewer' FROM generate_series(1, 120) n;
INSERT INTO items (id, company_id, sku, name, deleted_at) VALUES
  (1, 1, 'SKU-1', 'Widget', NULL), (2, 1, 'SKU-2', 'Gadget', NULL), (3, 1, 'SKU-3', 'Old widget', now() - interval '1 day'),
  (4, 2, 'SKU-1', 'Beta widget', NULL), (5, 2, 'SKU-B', 'Beta gadget', NULL);
INSERT INTO bins (id, facility_id, code, zone, bin_type, deleted_at) VALUES
  (1, 1, 'A-01', 'A', 'shelf', NULL), (2, 1, 'A-02', 'A', 'shelf', NULL), (3, 1, 'B-01', 'B', 'shelf', NULL),
  (4, 1, 'A-99', 'A', 'shelf', now() - interval '1 day'), (5, 2, 'F2-A-01', 'A', 'shelf', NULL),
  (6, 3, 'F3-A-01', 'A', 'shelf', NULL);
INSERT INTO stock_levels (facility_id, bin_id, item_id, qty_on_hand, qty_reserved) VALUES
  (1, 1, 1, 10, 1), (1, 2, 2, 5, 0), (1, 3, 1, 7, 2), (1, 4, 1, 100, 0), (2, 5, 1, 20, 0), (3, 6, 4, 30, 3);
INSERT INTO stock_moves (id, facility_id, item_id, from_bin_id, to_bin_id, qty, reason, status, created_by) VALUES
  (1, 1, 1, 1, 2, 1, 'restock', 'draft', 3), (2, 1, 1, 1, 2, 1, 'restock', 'posted', 3),
  (3, 1, 1, 1, 2, 1, 'restock', 'cancelled', 3), (4, 3, 4, 6, 6, 1, 'restock', 'draft', 10),
  (5, 2, 1, 5, 5, 1, 'restock', 'draft', 1);
INSERT INTO shipments (id, facility_id, order_ref, customer_name, ship_to_address, status, created_by, deleted_at) VALUES
  (1, 1, 'ORD-1', 'Acme Packed', 'Road 1', 'packed', 3, NULL),
  (2, 1, 'ORD-2', 'Acme Draft', 'Road 2', 'draft', 3, NULL),
  (3, 3, 'ORD-3', 'Acme Beta', 'Road 3', 'packed', 10, NULL),
  (4, 1, 'ORD-4', 'Acme Deleted', 'Road 4', 'shipped', 3, now() - interval '1 day'),
  (5, 2, 'ORD-5', 'Acme South', 'Road 5', 'packed', 1, NULL);
INSERT INTO pick_lists (id, facility_id, status, priority, assigned_to, created_by, deleted_at) VALUES
  (1, 1, 'open', 1, NULL, 2, NULL), (2, 1, 'picking', 5, 4, 2, NULL), (3, 1, 'picked', 1, 4, 2, NULL),
  (4, 1, 'assigned', 3, 4, 2, NULL), (5, 3, 'picking', 9, 10, 10, NULL), (6, 1, 'picking', 2, 6, 2, NULL),
  (7, 1, 'open', 1, NULL, 2, now() - interval '1 day');
INSERT INTO pick_lists (id, facility_id, status, priority, assigned_to, created_by)
SELECT 1000 + n, 1, 'assigned', 0, 4, 2 FROM generate_series(1, 120) n;
INSERT INTO pick_lines (id, pick_list_id, item_id, bin_id, qty_requested) VALUES
  (1, 2, 1, 1, 5), (2, 6, 1, 1, 5), (3, 3, 1, 1, 5), (4, 5, 4, 6, 5);
INSERT INTO cycle_counts (id, facility_id, bin_id, status, created_by) VALUES (1, 1, 1, 'submitted', 2), (2, 3, 6, 'submitted', 10);
INSERT INTO count_adjustments (id, cycle_count_id, facility_id, bin_id, item_id, expected_qty, counted_qty, status, requested_by, decided_by) VALUES
  (1, 1, 1, 1, 1, 10, 9, 'pending', 3, NULL), (2, 1, 1, 1, 1, 10, 8, 'pending', 2, NULL),
  (3, 1, 1, 1, 1, 10, 7, 'approved', 3, 1), (4, 2, 3, 6, 4, 30, 29, 'pending', 10, NULL);
INSERT INTO audit_log (id, company_id, facility_id, actor_user_id, action, entity_type, entity_id) VALUES
  (1, 1, 1, 1, 'grant', 'membership', 4), (2, 1, 1, 3, 'post', 'stock_move', 2), (3, 1, 2, 1, 'grant', 'membership', 12),
  (4, 2, 3, 10, 'grant', 'membership', 11);

-- More rows so that every guard of the good cases is exercised (`--verify --mutants`):
-- 12 Exa manager F1 expired (an expired caller with every role), 13 Tia manager of F1 and of F3
-- (a 3PL user with a top role in both companies), 14 Max viewer of 110 facilities (a page cap);
-- the deleted facility F4 holds bins, stock, moves, shipments, pick lists, counts and audit
-- entries, with members of every rank; revoked (9) and expired (8, 12) users and a viewer (5)
-- have pick lists assigned; deleted rows in F1 (a packed shipment, an assigned pick list, stock
-- of the deleted item); a decided (rejected) adjustment; and more rows than any page cap in F1
-- (audit entries, stocked bins, shipments). 15 Kim clerk and 16 Lee manager of F2 only (a role
-- held in another facility than the one asked for); 11 Paz (picker of F2 only) has a list in F1.
INSERT INTO facility_memberships (id, facility_id, user_id, role) VALUES (25, 2, 15, 'clerk'), (26, 2, 16, 'manager');
INSERT INTO facility_memberships (id, facility_id, user_id, role, expires_at, revoked_at) VALUES
  (17, 1, 12, 'manager', now() - interval '1 hour', NULL), (18, 1, 13, 'manager', NULL, NULL),
  (19, 3, 13, 'manager', NULL, NULL), (20, 4, 3, 'clerk', NULL, NULL), (21, 4, 4, 'picker', NULL, NULL),
  (22, 4, 2, 'supervisor', NULL, NULL), (23, 2, 12, 'manager', now() - interval '1 hour', NULL),
  (24, 2, 9, 'manager', NULL, now() - interval '1 hour');
INSERT INTO facilities (id, company_id, code, name, timezone, carrier_api_key)
SELECT 2000 + n, 1, 'FX' || n, 'Alpha Extra ' || lpad(n::text, 3, '0'), 'UTC', 'CARRIERKEY-X' || n
FROM generate_series(1, 110) n;
INSERT INTO facility_memberships (id, facility_id, user_id, role)
SELECT 2000 + n, 2000 + n, 14, 'viewer' FROM generate_series(1, 110) n;
INSERT INTO bins (id, facility_id, code, zone, bin_type, deleted_at) VALUES
  (7, 4, 'F4-A-01', 'A', 'shelf', NULL), (8, 4, 'F4-A-02', 'A', 'shelf', NULL);
INSERT INTO bins (id, facility_id, code, zone, bin_type)
SELECT 1000 + n, 1, 'C-' || lpad(n::text, 3, '0'), 'C', 'shelf' FROM generate_series(1, 120) n;
INSERT INTO stock_levels (facility_id, bin_id, item_id, qty_on_hand, qty_reserved) VALUES
  (4, 7, 1, 40, 4), (4, 8, 2, 4, 0), (1, 2, 3, 6, 1), (1, 4, 2, 50, 5);
-- a 3PL stock row: company 1's SKU-1 held in company 2's facility F3, where Lou (7) and Tia
-- (13) are members too; a total of company 1's stock must leave it out (rule 1)
INSERT INTO stock_levels (facility_id, bin_id, item_id, qty_on_hand, qty_reserved) VALUES (3, 6, 1, 9, 0);
INSERT INTO stock_levels (facility_id, bin_id, item_id, qty_on_hand, qty_reserved)
SELECT 1, 1000 + n, 2, 1, 0 FROM generate_series(1, 120) n;
INSERT INTO stock_moves (id, facility_id, item_id, from_bin_id, to_bin_id, qty, reason, status, created_by) VALUES
  (6, 4, 1, 7, 8, 1, 'restock', 'draft', 3), (7, 1, 1, 1, 2, 1, 'restock', 'draft', 9);
INSERT INTO shipments (id, facility_id, order_ref, customer_name, ship_to_address, status, created_by, deleted_at) VALUES
  (6, 4, 'ORD-6', 'Acme Closed', 'Road 6', 'packed', 3, NULL),
  (7, 1, 'ORD-7', 'Acme Gone', 'Road 7', 'packed', 3, now() - interval '1 day');
INSERT INTO shipments (id, facility_id, order_ref, customer_name, ship_to_address, status, created_by)
SELECT 1000 + n, 1, 'ORD-B' || n, 'Acme Bulk ' || n, 'Road B', 'draft', 3 FROM generate_series(1, 120) n;
INSERT INTO pick_lists (id, facility_id, status, priority, assigned_to, created_by, deleted_at) VALUES
  (8, 4, 'open', 1, NULL, 2, NULL), (9, 4, 'picking', 1, 4, 2, NULL),
  (10, 1, 'picking', 9, 4, 2, now() - interval '1 day'), (11, 1, 'picking', 1, 9, 2, NULL),
  (12, 1, 'picking', 1, 12, 2, NULL), (13, 1, 'picking', 1, 13, 2, NULL), (14, 1, 'picking', 1, 5, 2, NULL),
  (15, 4, 'picking', 1, 1, 2, NULL), (16, 1, 'picking', 1, 8, 2, NULL), (17, 1, 'open', 1, NULL, 2, now() - interval '1 day'),
  (18, 1, 'picking', 1, 11, 2, NULL);
INSERT INTO pick_lines (id, pick_list_id, item_id, bin_id, qty_requested) VALUES
  (5, 9, 1, 7, 5), (6, 10, 1, 1, 5), (7, 11, 1, 1, 5), (8, 12, 1, 1, 5), (9, 13, 1, 1, 5),
  (10, 14, 1, 1, 5), (11, 15, 1, 7, 5), (12, 16, 1, 1, 5), (13, 18, 1, 1, 5);
INSERT INTO cycle_counts (id, facility_id, bin_id, status, created_by) VALUES (3, 4, 7, 'submitted', 2);
INSERT INTO count_adjustments (id, cycle_count_id, facility_id, bin_id, item_id, expected_qty, counted_qty, status, requested_by, decided_by) VALUES
  (5, 3, 4, 7, 1, 40, 39, 'pending', 3, NULL), (6, 1, 1, 1, 1, 10, 6, 'rejected', 3, 1);
INSERT INTO audit_log (id, company_id, facility_id, actor_user_id, action, entity_type, entity_id) VALUES
  (5, 1, 4, 1, 'grant', 'membership', 20);
INSERT INTO audit_log (id, company_id, facility_id, actor_user_id, action, entity_type, entity_id)
SELECT 1000 + n, 1, 1, 1, 'post', 'stock_move', n FROM generate_series(1, 120) n;

SELECT setval(pg_get_serial_sequence(t, 'id'), 5000)
FROM unnest(ARRAY['companies', 'users', 'facilities', 'facility_memberships', 'items', 'bins', 'stock_moves',
                  'shipments', 'pick_lists', 'pick_lines', 'cycle_counts', 'count_adjustments', 'audit_log']) AS t;

-- Helpers for the properties (not used by the cases): the caller's active role in a live
-- facility of their company (NULL when none), and the rank of a role.
CREATE FUNCTION verify_role(p_user bigint, p_facility bigint, p_company bigint) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT m.role FROM facility_memberships m JOIN facilities f ON f.id = m.facility_id
   WHERE m.user_id = p_user AND m.facility_id = p_facility AND f.company_id = p_company
     AND f.deleted_at IS NULL AND m.revoked_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
$$;
CREATE FUNCTION verify_rank(p_role text) RETURNS int LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(array_position(ARRAY['viewer', 'picker', 'clerk', 'supervisor', 'manager'], p_role), 0)
$$;

-- The rule a caller's access to a facility breaks (NULL when none): 1 another company's
-- facility, 8 a deleted facility, 2 no membership there, 3 a revoked or expired one, 4 a rank
-- below p_min (1 viewer .. 5 manager). Properties name it in their `rule` column.
CREATE FUNCTION verify_rule(p_user bigint, p_facility bigint, p_company bigint, p_min int) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN f.id IS NULL THEN 'Rule 2'
    WHEN f.company_id <> p_company THEN 'Rule 1'
    WHEN f.deleted_at IS NOT NULL THEN 'Rule 8'
    WHEN m.id IS NULL THEN 'Rule 2'
    WHEN m.revoked_at IS NOT NULL OR m.expires_at <= now() THEN 'Rule 3'
    WHEN verify_rank(m.role) < p_min THEN 'Rule 4'
  END
  FROM (SELECT 1) AS one
  LEFT JOIN facilities f ON f.id = p_facility
  LEFT JOIN facility_memberships m ON m.facility_id = p_facility AND m.user_id = p_user
$$;

-- The key (id) of the row of p_table that a result row shows, whatever the case named its
-- columns: the `id` column, else another value of the row, that is the id of
-- a row of p_table agreeing with every same-named column of the result (numbers, booleans,
-- text; dates and times are left out, their text forms differ). NULL when none: properties
-- identify rows by the tables' keys, not by the case's column names.
CREATE FUNCTION verify_key(p_row jsonb, p_table regclass) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  candidate text;
  found boolean;
BEGIN
  -- The `id` column is tried first but not taken on trust: a result could show one row's id
  -- beside another row's values (`SELECT id AS note, body, 1 AS id`), and the property would
  -- then judge the row the id names, not the row shown.
  FOR candidate IN
    SELECT c.value FROM (
      SELECT p_row->>'id' AS value, 0 AS rank
       WHERE jsonb_typeof(p_row->'id') IN ('number', 'string')
      UNION ALL
      SELECT e.value #>> '{}', 1 FROM jsonb_each(p_row) e
       WHERE e.key <> 'id' AND jsonb_typeof(e.value) IN ('number', 'string')
    ) c ORDER BY c.rank
  LOOP
    EXECUTE format(
      'SELECT EXISTS (SELECT 1 FROM %s t WHERE t.id::text = $1 AND NOT EXISTS (
         SELECT 1 FROM jsonb_each($2) e
          WHERE to_jsonb(t) ? e.key AND jsonb_typeof(to_jsonb(t)->e.key) = jsonb_typeof(e.value)
            AND jsonb_typeof(e.value) IN (''number'', ''boolean'', ''string'')
            AND (e.value #>> ''{}'') !~ ''^\d{4}-\d{2}-\d{2}''
            AND to_jsonb(t)->e.key <> e.value))', p_table)
      INTO found USING candidate, p_row;
    IF found THEN
      RETURN candidate;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
