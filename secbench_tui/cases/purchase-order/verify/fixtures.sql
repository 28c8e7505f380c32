-- purchase-order: the SPEC's schema and seed rows for --verify.
CREATE TABLE organizations (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id             uuid PRIMARY KEY,
  org_id         uuid NOT NULL REFERENCES organizations(id),
  email          text NOT NULL,
  full_name      text NOT NULL,
  role           text NOT NULL CHECK (role IN ('requester','buyer','approver','finance','admin')),
  password_hash  text NOT NULL,
  mfa_secret     text,
  is_active      boolean NOT NULL DEFAULT true,
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, org_id)
);

CREATE TABLE suppliers (
  id                 uuid PRIMARY KEY,
  org_id             uuid NOT NULL REFERENCES organizations(id),
  name               text NOT NULL,
  contact_email      text,
  country            char(2),
  tax_id             text,
  bank_account_iban  text,
  status             text NOT NULL CHECK (status IN ('active','blocked')),
  created_at         timestamptz NOT NULL DEFAULT now(),
  deleted_at         timestamptz,
  UNIQUE (id, org_id)
);

CREATE TABLE purchase_orders (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id        uuid NOT NULL REFERENCES organizations(id),
  po_number     text NOT NULL,
  supplier_id   uuid NOT NULL,
  created_by    uuid NOT NULL,
  approved_by   uuid,
  status        text NOT NULL CHECK (status IN ('draft','submitted','approved','rejected',
                                                'ordered','received','closed','cancelled')),
  currency      char(3) NOT NULL,
  total_amount  numeric(14,2) NOT NULL DEFAULT 0,
  notes         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  submitted_at  timestamptz,
  approved_at   timestamptz,
  deleted_at    timestamptz,
  UNIQUE (id, org_id),
  FOREIGN KEY (supplier_id, org_id) REFERENCES suppliers(id, org_id),
  FOREIGN KEY (created_by, org_id)  REFERENCES users(id, org_id)
);

CREATE TABLE po_lines (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL,
  po_id        uuid NOT NULL,
  line_no      int NOT NULL,
  sku          text,
  description  text NOT NULL,
  quantity     numeric(12,3) NOT NULL CHECK (quantity > 0),
  unit_price   numeric(14,4) NOT NULL CHECK (unit_price >= 0),
  deleted_at   timestamptz,
  FOREIGN KEY (po_id, org_id) REFERENCES purchase_orders(id, org_id)
);

CREATE TABLE approvals (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL,
  po_id        uuid NOT NULL,
  approver_id  uuid NOT NULL,
  decision     text NOT NULL CHECK (decision IN ('approved','rejected')),
  comment      text,
  decided_at   timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (po_id, org_id)       REFERENCES purchase_orders(id, org_id),
  FOREIGN KEY (approver_id, org_id) REFERENCES users(id, org_id)
);

CREATE TABLE invoices (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          uuid NOT NULL,
  po_id           uuid NOT NULL,
  invoice_number  text NOT NULL,
  amount          numeric(14,2) NOT NULL,
  currency        char(3) NOT NULL,
  status          text NOT NULL CHECK (status IN ('received','matched','disputed','paid','void')),
  due_date        date NOT NULL,
  created_by      uuid NOT NULL,          -- user who registered the invoice
  created_at      timestamptz NOT NULL DEFAULT now(),
  paid_at         timestamptz,
  paid_by         uuid,
  FOREIGN KEY (po_id, org_id)      REFERENCES purchase_orders(id, org_id),
  FOREIGN KEY (created_by, org_id) REFERENCES users(id, org_id)
);

CREATE TABLE attachments (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id        uuid NOT NULL,
  po_id         uuid NOT NULL,
  uploaded_by   uuid NOT NULL,
  file_name     text NOT NULL,
  content_type  text NOT NULL,
  size_bytes    bigint NOT NULL,
  storage_key   text NOT NULL,          -- object-store key used by the download handler
  created_at    timestamptz NOT NULL DEFAULT now(),
  deleted_at    timestamptz,
  UNIQUE (id, org_id),
  FOREIGN KEY (po_id, org_id)       REFERENCES purchase_orders(id, org_id),
  FOREIGN KEY (uploaded_by, org_id) REFERENCES users(id, org_id)
);

CREATE TABLE attachment_share_links (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL,
  attachment_id  uuid NOT NULL,
  token          text NOT NULL UNIQUE,  -- 256-bit random, URL-safe
  created_by     uuid NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  revoked_at     timestamptz,
  FOREIGN KEY (attachment_id, org_id) REFERENCES attachments(id, org_id)
);

CREATE TABLE messages (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL,
  po_id       uuid NOT NULL,
  sender_id   uuid NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  edited_at   timestamptz,
  deleted_at  timestamptz,
  FOREIGN KEY (po_id, org_id)     REFERENCES purchase_orders(id, org_id),
  FOREIGN KEY (sender_id, org_id) REFERENCES users(id, org_id)
);

-- Seed rows. Ids read as <kind><org><n>: kind 1 users, 2 suppliers, 3 purchase orders,
-- 4 lines, 5 invoices, 6 attachments, 7 messages; org a or b. Secrets carry markers
-- (PWHASH-, MFASECRET-, TAXID-, IBAN-) that properties look for in results.

INSERT INTO organizations (id, name) VALUES
  ('00000000-0000-0000-0000-00000000000a', 'Org A'),
  ('00000000-0000-0000-0000-00000000000b', 'Org B');

INSERT INTO users (id, org_id, email, full_name, role, password_hash, mfa_secret, is_active) VALUES
  ('10000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', 'rita@a.example', 'Rita Requester', 'requester', 'PWHASH-rita', 'MFASECRET-rita', true),
  ('10000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', 'ray@a.example', 'Ray Requester', 'requester', 'PWHASH-ray', NULL, true),
  ('10000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-00000000000a', 'bob@a.example', 'Bob Buyer', 'buyer', 'PWHASH-bob', 'MFASECRET-bob', true),
  ('10000000-0000-0000-0000-0000000000a4', '00000000-0000-0000-0000-00000000000a', 'alice@a.example', 'Alice Approver', 'approver', 'PWHASH-alice', NULL, true),
  ('10000000-0000-0000-0000-0000000000a5', '00000000-0000-0000-0000-00000000000a', 'fay@a.example', 'Fay Finance', 'finance', 'PWHASH-fay', 'MFASECRET-fay', true),
  ('10000000-0000-0000-0000-0000000000a6', '00000000-0000-0000-0000-00000000000a', 'ada@a.example', 'Ada Admin', 'admin', 'PWHASH-ada', 'MFASECRET-ada', true),
  ('10000000-0000-0000-0000-0000000000a7', '00000000-0000-0000-0000-00000000000a', 'old@a.example', 'Otto Inactive', 'buyer', 'PWHASH-otto', NULL, false),
  ('10000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', 'bea@b.example', 'Bea Admin', 'admin', 'PWHASH-bea', 'MFASECRET-bea', true),
  ('10000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-00000000000b', 'sam@b.example', 'Sam Requester', 'requester', 'PWHASH-sam', NULL, true),
  ('10000000-0000-0000-0000-0000000000b3', '00000000-0000-0000-0000-00000000000b', 'fran@b.example', 'Fran Finance', 'finance', 'PWHASH-fran', NULL, true);

INSERT INTO suppliers (id, org_id, name, contact_email, country, tax_id, bank_account_iban, status, deleted_at) VALUES
  ('20000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', 'Acme Tools', 'sales@acme.example', 'DE', 'TAXID-acme', 'IBAN-acme', 'active', NULL),
  ('20000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', 'Acme Blocked', NULL, 'FR', 'TAXID-blocked', 'IBAN-blocked', 'blocked', NULL),
  ('20000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-00000000000a', 'Acme Gone', NULL, 'FR', 'TAXID-gone', 'IBAN-gone', 'active', now() - interval '3 days'),
  ('20000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', 'AAA Acme of B', NULL, 'US', 'TAXID-b', 'IBAN-b', 'active', NULL);
INSERT INTO suppliers (id, org_id, name, country, status)
SELECT gen_random_uuid(), '00000000-0000-0000-0000-00000000000a', 'Bulk supplier ' || lpad(n::text, 3, '0'), 'NL', 'active'
FROM generate_series(1, 120) AS n;

INSERT INTO purchase_orders (id, org_id, po_number, supplier_id, created_by, approved_by, status, currency,
                             total_amount, created_at, submitted_at, deleted_at) VALUES
  ('30000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', 'PO-A1', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', NULL, 'draft', 'EUR', 100, now() - interval '10 days', NULL, NULL),
  ('30000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', 'PO-A2', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', NULL, 'submitted', 'EUR', 500, now() - interval '9 days', now() - interval '8 days', NULL),
  ('30000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-00000000000a', 'PO-A3', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a6', NULL, 'submitted', 'EUR', 900, now() - interval '9 days', now() - interval '8 days', NULL),
  ('30000000-0000-0000-0000-0000000000a4', '00000000-0000-0000-0000-00000000000a', 'PO-A4', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a2', NULL, 'draft', 'EUR', 40, now() - interval '8 days', NULL, NULL),
  ('30000000-0000-0000-0000-0000000000a5', '00000000-0000-0000-0000-00000000000a', 'PO-A5', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', NULL, 'rejected', 'EUR', 70, now() - interval '8 days', now() - interval '7 days', NULL),
  ('30000000-0000-0000-0000-0000000000a6', '00000000-0000-0000-0000-00000000000a', 'PO-A6', '20000000-0000-0000-0000-0000000000a3', '10000000-0000-0000-0000-0000000000a3', '10000000-0000-0000-0000-0000000000a4', 'approved', 'EUR', 300, now() - interval '7 days', now() - interval '6 days', NULL),
  ('30000000-0000-0000-0000-0000000000a7', '00000000-0000-0000-0000-00000000000a', 'PO-A7', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', NULL, 'submitted', 'EUR', 800, now() - interval '7 days', now() - interval '6 days', now() - interval '1 day'),
  ('30000000-0000-0000-0000-0000000000a8', '00000000-0000-0000-0000-00000000000a', 'PO-A8', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', NULL, 'draft', 'EUR', 20, now() - interval '6 days', NULL, now() - interval '1 day'),
  ('30000000-0000-0000-0000-0000000000a9', '00000000-0000-0000-0000-00000000000a', 'PO-A9', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a3', '10000000-0000-0000-0000-0000000000a4', 'ordered', 'EUR', 650, now() - interval '6 days', now() - interval '5 days', NULL),
  ('30000000-0000-0000-0000-0000000000aa', '00000000-0000-0000-0000-00000000000a', 'PO-AA', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a3', '10000000-0000-0000-0000-0000000000a4', 'received', 'EUR', 75, now() - interval '5 days', now() - interval '4 days', NULL),
  ('30000000-0000-0000-0000-0000000000ab', '00000000-0000-0000-0000-00000000000a', 'PO-AB', '20000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a3', '10000000-0000-0000-0000-0000000000a4', 'approved', 'EUR', 4000, now() - interval '5 days', now() - interval '4 days', now() - interval '1 day'),
  ('30000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', 'PO-B1', '20000000-0000-0000-0000-0000000000b1', '10000000-0000-0000-0000-0000000000b2', NULL, 'submitted', 'USD', 1500, '2020-01-01', '2020-01-02', NULL),
  ('30000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-00000000000b', 'PO-B2', '20000000-0000-0000-0000-0000000000b1', '10000000-0000-0000-0000-0000000000b2', NULL, 'draft', 'USD', 60, '2020-01-03', NULL, NULL);
INSERT INTO purchase_orders (org_id, po_number, supplier_id, created_by, status, currency, total_amount, created_at)
SELECT '00000000-0000-0000-0000-00000000000a', 'BULK-' || n, '20000000-0000-0000-0000-0000000000a1',
       '10000000-0000-0000-0000-0000000000a3', 'draft', 'EUR', n, now() - interval '30 days' - n * interval '1 hour'
FROM generate_series(1, 130) AS n;

INSERT INTO po_lines (id, org_id, po_id, line_no, sku, description, quantity, unit_price, deleted_at) VALUES
  ('40000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', 1, 'SKU-1', 'Hammer', 2, 10, NULL),
  ('40000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', 2, 'SKU-2', 'Nails', 100, 0.5, NULL),
  ('40000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', 3, 'SKU-3', 'Removed saw', 1, 30, now() - interval '1 day'),
  ('40000000-0000-0000-0000-0000000000a4', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a4', 1, 'SKU-4', 'Paper', 4, 10, NULL),
  ('40000000-0000-0000-0000-0000000000a5', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a2', 1, 'SKU-5', 'Desk', 1, 500, NULL),
  ('40000000-0000-0000-0000-0000000000a6', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a6', 1, 'SKU-6', 'Chair', 3, 100, NULL),
  ('40000000-0000-0000-0000-0000000000a7', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a8', 1, 'SKU-7', 'Lamp', 1, 20, NULL),
  ('40000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b2', 1, 'SKU-B', 'B widget', 6, 10, NULL);

INSERT INTO invoices (id, org_id, po_id, invoice_number, amount, currency, status, due_date, created_by) VALUES
  ('50000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a6', 'INV-A1', 300, 'EUR', 'matched', current_date - 10, '10000000-0000-0000-0000-0000000000a5'),
  ('50000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a9', 'INV-A2', 650, 'EUR', 'matched', current_date + 20, '10000000-0000-0000-0000-0000000000a6'),
  ('50000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a9', 'INV-A3', 10, 'EUR', 'received', current_date - 5, '10000000-0000-0000-0000-0000000000a6'),
  ('50000000-0000-0000-0000-0000000000a4', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a7', 'INV-A4', 800, 'EUR', 'matched', current_date + 20, '10000000-0000-0000-0000-0000000000a6'),
  ('50000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b1', 'INV-B1', 1500, 'USD', 'matched', current_date - 10, '10000000-0000-0000-0000-0000000000b3'),
  ('50000000-0000-0000-0000-0000000000b2', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b1', 'INV-B2', 15, 'USD', 'received', current_date - 10, '10000000-0000-0000-0000-0000000000b3');

INSERT INTO attachments (id, org_id, po_id, uploaded_by, file_name, content_type, size_bytes, storage_key, deleted_at) VALUES
  ('60000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', 'quote.pdf', 'application/pdf', 1000, 'key-a1', NULL),
  ('60000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', 'old.pdf', 'application/pdf', 1000, 'key-a2', now() - interval '1 day'),
  ('60000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b2', '10000000-0000-0000-0000-0000000000b2', 'b.pdf', 'application/pdf', 1000, 'key-b1', NULL);

INSERT INTO attachment_share_links (org_id, attachment_id, token, created_by, expires_at, revoked_at) VALUES
  ('00000000-0000-0000-0000-00000000000a', '60000000-0000-0000-0000-0000000000a1', 'tok-valid', '10000000-0000-0000-0000-0000000000a1', now() + interval '1 day', NULL),
  ('00000000-0000-0000-0000-00000000000a', '60000000-0000-0000-0000-0000000000a1', 'tok-expired', '10000000-0000-0000-0000-0000000000a1', now() - interval '1 hour', NULL),
  ('00000000-0000-0000-0000-00000000000a', '60000000-0000-0000-0000-0000000000a1', 'tok-revoked', '10000000-0000-0000-0000-0000000000a1', now() + interval '1 day', now() - interval '1 hour'),
  ('00000000-0000-0000-0000-00000000000a', '60000000-0000-0000-0000-0000000000a2', 'tok-deleted', '10000000-0000-0000-0000-0000000000a1', now() + interval '1 day', NULL),
  ('00000000-0000-0000-0000-00000000000b', '60000000-0000-0000-0000-0000000000b1', 'tok-b', '10000000-0000-0000-0000-0000000000b2', now() + interval '1 day', NULL);

INSERT INTO messages (id, org_id, po_id, sender_id, body, created_at, edited_at, deleted_at) VALUES
  ('70000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', 'Rita recent', now() - interval '5 minutes', NULL, NULL),
  ('70000000-0000-0000-0000-0000000000a2', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a3', 'Bob recent', now() - interval '5 minutes', NULL, NULL),
  ('70000000-0000-0000-0000-0000000000a3', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', 'Rita old', now() - interval '2 hours', NULL, NULL),
  ('70000000-0000-0000-0000-0000000000a4', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', 'Rita old, edited', now() - interval '2 hours', now() - interval '5 minutes', NULL),
  ('70000000-0000-0000-0000-0000000000a5', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a1', '10000000-0000-0000-0000-0000000000a1', 'Rita deleted', now() - interval '4 minutes', NULL, now() - interval '1 minute'),
  ('70000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b2', '10000000-0000-0000-0000-0000000000b2', 'Sam recent', now() - interval '5 minutes', NULL, NULL);
INSERT INTO messages (org_id, po_id, sender_id, body, created_at)
SELECT '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a9', '10000000-0000-0000-0000-0000000000a3',
       'thread message ' || n, now() - interval '1 day' - n * interval '1 minute'
FROM generate_series(1, 120) AS n;

-- More rows so that every guard of the good cases is exercised (`--verify --mutants`): more
-- submitted POs, users and lines (of PO-A9) than any page cap; a line under the rejected PO-A5
-- (a non-draft PO of Rita's that has lines); more overdue matched invoices in org B than org A has
-- overdue open invoices (a dashboard count that leaks org B's is then too high).
INSERT INTO purchase_orders (org_id, po_number, supplier_id, created_by, status, currency, total_amount, created_at, submitted_at)
SELECT '00000000-0000-0000-0000-00000000000a', 'SUB-' || n, '20000000-0000-0000-0000-0000000000a1',
       '10000000-0000-0000-0000-0000000000a3', 'submitted', 'EUR', n, now() - interval '40 days', now() - interval '1 day' + n * interval '1 minute'
FROM generate_series(1, 110) AS n;
INSERT INTO users (id, org_id, email, full_name, role, password_hash, is_active)
SELECT gen_random_uuid(), '00000000-0000-0000-0000-00000000000a', 'bulk' || n || '@a.example', 'Bulk user ' || lpad(n::text, 3, '0'), 'requester', 'PWHASH-bulk', true
FROM generate_series(1, 110) AS n;
INSERT INTO po_lines (org_id, po_id, line_no, sku, description, quantity, unit_price)
SELECT '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a9', 100 + n, 'SKU-L' || n, 'Bulk line', 1, 1
FROM generate_series(1, 110) AS n;
INSERT INTO po_lines (id, org_id, po_id, line_no, sku, description, quantity, unit_price) VALUES
  ('40000000-0000-0000-0000-0000000000a8', '00000000-0000-0000-0000-00000000000a', '30000000-0000-0000-0000-0000000000a5', 1, 'SKU-8', 'Rejected desk', 1, 70);
INSERT INTO invoices (id, org_id, po_id, invoice_number, amount, currency, status, due_date, created_by) VALUES
  ('50000000-0000-0000-0000-0000000000b3', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b1', 'INV-B3', 5, 'USD', 'matched', current_date - 3, '10000000-0000-0000-0000-0000000000b3'),
  ('50000000-0000-0000-0000-0000000000b4', '00000000-0000-0000-0000-00000000000b', '30000000-0000-0000-0000-0000000000b1', 'INV-B4', 5, 'USD', 'matched', current_date - 3, '10000000-0000-0000-0000-0000000000b3');

-- Helpers for the properties (not used by the cases).
CREATE FUNCTION verify_po_visible(p_po uuid, p_org uuid, p_user uuid, p_role text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM purchase_orders po
                  WHERE po.id = p_po AND po.org_id = p_org AND po.deleted_at IS NULL
                    AND (p_role <> 'requester' OR po.created_by = p_user))
$$;

-- The rule a row of purchase order p_po breaks for this caller (NULL when none): 1 another
-- organization's, 7 a deleted PO, 3 a requester's view of a PO they did not create.
CREATE FUNCTION verify_po_rule(p_po uuid, p_org uuid, p_user uuid, p_role text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN po.id IS NULL OR po.org_id <> p_org THEN 'Rule 1'
    WHEN po.deleted_at IS NOT NULL THEN 'Rule 7'
    WHEN p_role = 'requester' AND po.created_by <> p_user THEN 'Rule 3'
  END
  FROM (SELECT 1) AS one LEFT JOIN purchase_orders po ON po.id = p_po
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
