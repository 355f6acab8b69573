-- Self-service settings: the settlement wallet an owner chose before live activation, and when
-- they asked for activation; each member's choice of webhook alert emails; notices to members
-- (each row also its email's outbox row); and which incidents' alerts were queued.
ALTER TABLE merchants
    ADD COLUMN requested_wallet text,
    ADD COLUMN requested_token text CHECK (requested_token IN ('USDC', 'USDT')),
    ADD COLUMN activation_requested_at timestamptz,
    ADD CONSTRAINT merchants_requested_live CHECK ((requested_wallet IS NULL) = (requested_token IS NULL)),
    ADD CONSTRAINT merchants_request_has_wallet CHECK (activation_requested_at IS NULL OR requested_wallet IS NOT NULL);

ALTER TABLE memberships ADD COLUMN webhook_alerts boolean NOT NULL DEFAULT false;

CREATE TABLE notices (
    id                    text PRIMARY KEY,
    merchant_id           text NOT NULL REFERENCES merchants (id),
    kind                  text NOT NULL CHECK (kind IN ('wallet_changed', 'incident_opened', 'incident_resolved')),
    recipient             text NOT NULL,
    subject               text NOT NULL,
    intro                 text NOT NULL,
    button_text           text NOT NULL,
    button_url            text NOT NULL,
    created_at            timestamptz NOT NULL,
    mail_status           text NOT NULL CHECK (mail_status IN ('queued', 'sent', 'failed')),
    mail_attempts         integer NOT NULL DEFAULT 0,
    mail_next_attempt_at  timestamptz NOT NULL,
    mail_last_error       text,
    mail_sent_at          timestamptz,
    mail_lease_until      timestamptz
);
CREATE INDEX notices_due ON notices (mail_next_attempt_at) WHERE mail_status = 'queued';

-- An incident's alerts are queued once each (opened, resolved), with their notices.
ALTER TABLE webhook_incidents
    ADD COLUMN opened_alerted boolean NOT NULL DEFAULT false,
    ADD COLUMN resolved_alerted boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_incidents_alerts ON webhook_incidents (seq)
    WHERE NOT opened_alerted OR (status = 'resolved' AND NOT resolved_alerted);
