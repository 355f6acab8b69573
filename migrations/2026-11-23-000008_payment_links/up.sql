-- Payment links: the configuration, the merchant's lifecycle, a single-use link's reservation,
-- and the invoices created through each link.
CREATE TABLE payment_links (
    seq                 bigserial NOT NULL UNIQUE,
    id                  text PRIMARY KEY,
    public_id           text NOT NULL UNIQUE,
    merchant_id         text NOT NULL REFERENCES merchants (id),
    mode                text NOT NULL CHECK (mode IN ('test', 'live')),
    title               text NOT NULL,
    description         text,
    amount_type         text NOT NULL CHECK (amount_type IN ('fixed', 'customer_entered')),
    amount              numeric(38, 6),
    minimum_amount      numeric(38, 6),
    maximum_amount      numeric(38, 6),
    currency            text NOT NULL CHECK (currency IN ('USDC', 'USDT')),
    usage_type          text NOT NULL CHECK (usage_type IN ('single_use', 'reusable')),
    active_at           timestamptz,
    expires_at          timestamptz,
    collect_email       boolean NOT NULL,
    collect_name        boolean NOT NULL,
    collect_reference   boolean NOT NULL,
    reference_prefix    text,
    success_url         text,
    cancel_url          text,
    success_message     text,
    metadata            jsonb,
    version             bigint NOT NULL,
    lifecycle           text NOT NULL CHECK (lifecycle IN ('active', 'paused', 'archived')),
    -- A single-use link's invoice (its reservation holds while that invoice is payable or paid).
    -- Checked at commit: the reservation is taken first (the row lock orders concurrent
    -- submissions), the invoice written after it in the same transaction.
    reserved_invoice_id text REFERENCES invoices (id) DEFERRABLE INITIALLY DEFERRED,
    expiry_announced    boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    lock_version        bigint NOT NULL,
    CHECK ((amount_type = 'fixed') = (amount IS NOT NULL)),
    CHECK ((amount_type = 'customer_entered') = (minimum_amount IS NOT NULL))
);
CREATE INDEX payment_links_scope ON payment_links (merchant_id, mode, seq);
CREATE INDEX payment_links_expiring ON payment_links (expires_at)
    WHERE NOT expiry_announced AND expires_at IS NOT NULL AND lifecycle <> 'archived';

CREATE TABLE payment_link_invoices (
    seq          bigserial NOT NULL UNIQUE,
    invoice_id   text PRIMARY KEY REFERENCES invoices (id),
    link_id      text NOT NULL REFERENCES payment_links (id),
    merchant_id  text NOT NULL,
    mode         text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX payment_link_invoices_link ON payment_link_invoices (link_id, seq);
