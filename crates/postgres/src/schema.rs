//! Table definitions (kept by hand, in step with `migrations/`).

diesel::table! {
    merchants (id) {
        id -> Text,
        name -> Text,
        website_origin -> Nullable<Text>,
        status -> Text,
        live_wallet -> Nullable<Text>,
        live_token -> Nullable<Text>,
        live_activated_at -> Nullable<Timestamptz>,
        fee_basis_points -> Int4,
        invoice_prefix -> Text,
        created_at -> Timestamptz,
        live_unique_amounts -> Bool,
        legal_name -> Nullable<Text>,
        postal_address -> Nullable<Text>,
        tax_id -> Nullable<Text>,
        support_email -> Nullable<Text>,
        reply_to -> Nullable<Text>,
        logo_digest -> Nullable<Text>,
        logo_width -> Nullable<Int4>,
        logo_height -> Nullable<Int4>,
        require_two_factor -> Bool,
        requested_wallet -> Nullable<Text>,
        requested_token -> Nullable<Text>,
        activation_requested_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    merchant_logos (digest) {
        digest -> Text,
        png -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        key_type -> Text,
        digest -> Bytea,
        display_prefix -> Text,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        last_used_at -> Nullable<Timestamptz>,
        permissions -> Nullable<Text>,
    }
}

diesel::table! {
    test_clocks (merchant_id) {
        merchant_id -> Text,
        offset_seconds -> Int8,
    }
}

diesel::table! {
    events (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        #[sql_name = "type"]
        event_type -> Text,
        data -> Jsonb,
        created_at -> Timestamptz,
        test -> Bool,
        stored_at -> Timestamptz,
    }
}

diesel::joinable!(api_keys -> merchants (merchant_id));

diesel::table! {
    invoices (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        kind -> Text,
        number -> Nullable<Text>,
        number_prefix -> Text,
        public_token -> Nullable<Text>,
        collection_state -> Text,
        status -> Text,
        version -> Int8,
        currency -> Text,
        breakdown -> Jsonb,
        total -> Numeric,
        customer_amount_paid -> Numeric,
        merchant_amount_settled -> Numeric,
        fee_basis_points -> Int4,
        settlement_wallet -> Text,
        due_at -> Nullable<Timestamptz>,
        past_due_at -> Nullable<Timestamptz>,
        close_reason -> Nullable<Text>,
        payment_count -> Int4,
        fields -> Jsonb,
        refunds -> Jsonb,
        activity -> Jsonb,
        issued_at -> Nullable<Timestamptz>,
        paid_at -> Nullable<Timestamptz>,
        closed_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        lock_version -> Int8,
        lease_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    checkout_sessions (id) {
        id -> Text,
        invoice_id -> Text,
        merchant_id -> Text,
        mode -> Text,
        status -> Text,
        amount_due -> Numeric,
        currency -> Text,
        settlement_wallet -> Text,
        external_reference -> Nullable<Text>,
        customer_email -> Nullable<Text>,
        success_url -> Nullable<Text>,
        cancel_url -> Nullable<Text>,
        expires_at -> Timestamptz,
        created_at -> Timestamptz,
        completed_at -> Nullable<Timestamptz>,
        chain_id -> Int8,
        token_contract -> Text,
        amount_offset -> Numeric,
    }
}

diesel::table! {
    checkout_authorizations (nonce) {
        nonce -> Bytea,
        checkout_session_id -> Text,
        wallet -> Text,
        created_at -> Timestamptz,
        token_contract -> Nullable<Text>,
        recipient -> Nullable<Text>,
        value_units -> Nullable<Numeric>,
        valid_after -> Nullable<Int8>,
        valid_before -> Nullable<Int8>,
    }
}

diesel::table! {
    relayer_accounts (address) {
        address -> Text,
        next_nonce -> Int8,
        lease_holder -> Nullable<Text>,
        leased_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    relayed_authorizations (id) {
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        checkout_session_id -> Text,
        nonce -> Bytea,
        relayer -> Text,
        signature -> Bytea,
        status -> Text,
        gas_limit -> Int8,
        tx_nonce -> Nullable<Int8>,
        broadcast_at -> Nullable<Timestamptz>,
        mined_hash -> Nullable<Text>,
        mined_succeeded -> Nullable<Bool>,
        mined_block -> Nullable<Int8>,
        gas_used -> Nullable<Int8>,
        fee_wei -> Nullable<Numeric>,
        detail -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    relayed_transactions (tx_hash) {
        tx_hash -> Text,
        relay_id -> Text,
        raw -> Bytea,
        max_fee_per_gas -> Numeric,
        max_priority_fee_per_gas -> Numeric,
        signed_at -> Timestamptz,
    }
}

diesel::table! {
    checkout_bindings (checkout_session_id, wallet) {
        checkout_session_id -> Text,
        wallet -> Text,
        bound_at -> Timestamptz,
    }
}

diesel::table! {
    payments (id) {
        id -> Text,
        invoice_id -> Text,
        checkout_session_id -> Text,
        merchant_id -> Text,
        mode -> Text,
        status -> Text,
        amount_expected -> Numeric,
        amount_received -> Numeric,
        customer_amount_credited -> Numeric,
        merchant_amount_settled -> Numeric,
        transaction_hash -> Text,
        chain_id -> Int8,
        token_contract -> Text,
        settlement_wallet -> Text,
        payer_address -> Nullable<Text>,
        failure_reason -> Nullable<Text>,
        detected_at -> Timestamptz,
        confirmed_at -> Nullable<Timestamptz>,
        block_number -> Nullable<Int8>,
        block_hash -> Nullable<Text>,
        diagnostic -> Nullable<Text>,
        next_check_at -> Nullable<Timestamptz>,
        claimed_log -> Nullable<Int8>,
        logs -> Nullable<Array<Int8>>,
        missing_since -> Nullable<Timestamptz>,
        evidence -> Nullable<Text>,
        block_time -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    credited_transfer_logs (chain_id, transaction_hash, log_index) {
        chain_id -> Int8,
        transaction_hash -> Text,
        log_index -> Int8,
        payment_id -> Text,
    }
}

diesel::table! {
    deferred_transfers (chain_id, transaction_hash, log_index) {
        chain_id -> Int8,
        transaction_hash -> Text,
        log_index -> Int8,
        block_number -> Int8,
        block_hash -> Text,
        block_time -> Timestamptz,
        token_contract -> Text,
        from_address -> Text,
        to_address -> Text,
        amount -> Numeric,
        deferred_at -> Timestamptz,
        authorization_nonce -> Nullable<Bytea>,
    }
}

diesel::table! {
    chain_cursors (chain_id) {
        chain_id -> Int8,
        next_block -> Int8,
        held_since -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    chain_rechecks (chain_id, from_block) {
        chain_id -> Int8,
        from_block -> Int8,
        to_block -> Int8,
        due_at -> Timestamptz,
        lease_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    unattributed_transfers (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        chain_id -> Int8,
        transaction_hash -> Text,
        log_index -> Int8,
        block_number -> Int8,
        block_hash -> Text,
        currency -> Text,
        token_contract -> Text,
        from_address -> Text,
        to_address -> Text,
        amount -> Numeric,
        reason -> Text,
        detected_at -> Timestamptz,
        block_time -> Nullable<Timestamptz>,
        candidates -> Array<Text>,
        status -> Text,
        payment_id -> Nullable<Text>,
        attributed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    idempotency_keys (merchant_id, mode, key_type, key) {
        merchant_id -> Text,
        mode -> Text,
        key_type -> Text,
        key -> Text,
        fingerprint -> Bytea,
        state -> Text,
        response_status -> Nullable<Int4>,
        response_body -> Nullable<Text>,
        created_at -> Timestamptz,
        committed -> Nullable<Text>,
    }
}

diesel::table! {
    webhook_endpoints (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        url -> Text,
        description -> Nullable<Text>,
        event_types -> Nullable<Array<Text>>,
        state -> Text,
        alert_on_incident_opened -> Bool,
        alert_on_incident_resolved -> Bool,
        secret -> Bytea,
        previous_secret -> Nullable<Bytea>,
        previous_secret_until -> Nullable<Timestamptz>,
        consecutive_failures -> Int4,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        archived_at -> Nullable<Timestamptz>,
        lock_version -> Int8,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        endpoint_id -> Text,
        event_id -> Text,
        event_type -> Text,
        status -> Text,
        attempt_count -> Int4,
        next_attempt_at -> Nullable<Timestamptz>,
        claim -> Nullable<Text>,
        lease_until -> Nullable<Timestamptz>,
        test -> Bool,
        replay_of -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        delivered_at -> Nullable<Timestamptz>,
        event_stored_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_attempts (delivery_id, number) {
        delivery_id -> Text,
        number -> Int4,
        started_at -> Timestamptz,
        duration_ms -> Int4,
        status_code -> Nullable<Int4>,
        error_category -> Nullable<Text>,
        error_message -> Nullable<Text>,
        response_excerpt -> Nullable<Text>,
        request_headers -> Jsonb,
        event_stored_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_incidents (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        endpoint_id -> Text,
        status -> Text,
        opened_at -> Timestamptz,
        resolved_at -> Nullable<Timestamptz>,
        failed_attempts -> Int4,
        last_error_category -> Nullable<Text>,
        last_delivery_id -> Nullable<Text>,
        opened_alerted -> Bool,
        resolved_alerted -> Bool,
    }
}

diesel::table! {
    payment_links (id) {
        seq -> Int8,
        id -> Text,
        public_id -> Text,
        merchant_id -> Text,
        mode -> Text,
        title -> Text,
        description -> Nullable<Text>,
        amount_type -> Text,
        amount -> Nullable<Numeric>,
        minimum_amount -> Nullable<Numeric>,
        maximum_amount -> Nullable<Numeric>,
        currency -> Text,
        usage_type -> Text,
        active_at -> Nullable<Timestamptz>,
        expires_at -> Nullable<Timestamptz>,
        collect_email -> Bool,
        collect_name -> Bool,
        collect_reference -> Bool,
        reference_prefix -> Nullable<Text>,
        success_url -> Nullable<Text>,
        cancel_url -> Nullable<Text>,
        success_message -> Nullable<Text>,
        metadata -> Nullable<Jsonb>,
        version -> Int8,
        lifecycle -> Text,
        reserved_invoice_id -> Nullable<Text>,
        expiry_announced -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        lock_version -> Int8,
    }
}

diesel::table! {
    payment_link_invoices (invoice_id) {
        seq -> Int8,
        invoice_id -> Text,
        link_id -> Text,
        merchant_id -> Text,
        mode -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    emails (id) {
        id -> Text,
        merchant_id -> Nullable<Text>,
        mode -> Nullable<Text>,
        invoice_id -> Nullable<Text>,
        kind -> Text,
        slot -> Text,
        recipient -> Text,
        status -> Text,
        attempts -> Int4,
        last_error -> Nullable<Text>,
        next_attempt_at -> Timestamptz,
        lease_until -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        sent_at -> Nullable<Timestamptz>,
        statement_id -> Nullable<Text>,
        account_link_id -> Nullable<Text>,
        notice_id -> Nullable<Text>,
    }
}

diesel::table! {
    statement_settings (merchant_id, mode) {
        merchant_id -> Text,
        mode -> Text,
        email -> Text,
        enabled_at -> Timestamptz,
    }
}

diesel::table! {
    statements (id) {
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        month -> Date,
        email -> Text,
        token -> Text,
        invoices_export_id -> Text,
        payments_export_id -> Text,
        status -> Text,
        failure -> Nullable<Text>,
        email_id -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    exports (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        export_type -> Text,
        schema_name -> Text,
        range_from -> Timestamptz,
        range_to -> Timestamptz,
        filter_collection_state -> Nullable<Text>,
        filter_payment_link -> Nullable<Text>,
        filter_payment_status -> Nullable<Text>,
        filter_run -> Nullable<Text>,
        filter_outcome -> Nullable<Text>,
        status -> Text,
        row_count -> Nullable<Int8>,
        byte_size -> Nullable<Int8>,
        failure_message -> Nullable<Text>,
        created_at -> Timestamptz,
        ready_at -> Nullable<Timestamptz>,
        expires_at -> Nullable<Timestamptz>,
        lease_until -> Nullable<Timestamptz>,
        filter_amount_type -> Nullable<Text>,
        filter_usage -> Nullable<Text>,
        filter_token -> Nullable<Text>,
        filter_endpoint -> Nullable<Text>,
        filter_event_type -> Nullable<Text>,
        filter_delivery_status -> Nullable<Text>,
    }
}

diesel::table! {
    export_chunks (export_id, seq) {
        export_id -> Text,
        seq -> Int4,
        bytes -> Bytea,
    }
}

diesel::table! {
    reconciliation_runs (id) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        mode -> Text,
        range_from -> Timestamptz,
        range_to -> Timestamptz,
        status -> Text,
        from_block -> Nullable<Int8>,
        to_block -> Nullable<Int8>,
        final_block -> Nullable<Int8>,
        complete -> Bool,
        wallets -> Array<Text>,
        credited_elsewhere -> Int8,
        failure_message -> Nullable<Text>,
        created_at -> Timestamptz,
        completed_at -> Nullable<Timestamptz>,
        lease_until -> Nullable<Timestamptz>,
        daily -> Bool,
    }
}

diesel::table! {
    reconciliation_items (run_id, line) {
        run_id -> Text,
        line -> Int8,
        outcome -> Text,
        currency -> Text,
        transaction_hash -> Text,
        log_index -> Nullable<Int8>,
        block_number -> Nullable<Int8>,
        block_time -> Nullable<Timestamptz>,
        from_address -> Nullable<Text>,
        to_address -> Text,
        amount_onchain -> Nullable<Numeric>,
        amount_credited -> Nullable<Numeric>,
        payment_id -> Nullable<Text>,
        invoice_id -> Nullable<Text>,
        unattributed_transfer_id -> Nullable<Text>,
        detail -> Text,
    }
}

diesel::table! {
    users (id) {
        id -> Text,
        email -> Text,
        name -> Text,
        password_hash -> Text,
        email_verified_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        totp_secret -> Nullable<Bytea>,
        totp_pending -> Nullable<Bytea>,
        totp_last_step -> Nullable<Int8>,
        two_factor_since -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    memberships (user_id, merchant_id) {
        user_id -> Text,
        merchant_id -> Text,
        role -> Text,
        created_at -> Timestamptz,
        webhook_alerts -> Bool,
    }
}

diesel::table! {
    sessions (id) {
        id -> Text,
        user_id -> Text,
        token_digest -> Bytea,
        csrf_token -> Text,
        created_at -> Timestamptz,
        last_seen_at -> Timestamptz,
        reauthenticated_at -> Timestamptz,
    }
}

diesel::table! {
    recovery_codes (user_id, digest) {
        user_id -> Text,
        digest -> Bytea,
        used_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    account_links (id) {
        id -> Text,
        purpose -> Text,
        email -> Text,
        user_id -> Nullable<Text>,
        merchant_id -> Nullable<Text>,
        role -> Nullable<Text>,
        invited_by -> Nullable<Text>,
        token_digest -> Nullable<Bytea>,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    audit_log (seq) {
        seq -> Int8,
        id -> Text,
        merchant_id -> Text,
        actor_id -> Nullable<Text>,
        actor_email -> Nullable<Text>,
        action -> Text,
        target -> Nullable<Text>,
        detail -> Text,
        at -> Timestamptz,
    }
}

diesel::table! {
    notices (id) {
        id -> Text,
        merchant_id -> Text,
        kind -> Text,
        recipient -> Text,
        subject -> Text,
        intro -> Text,
        button_text -> Text,
        button_url -> Text,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(payments -> invoices (invoice_id));
diesel::joinable!(checkout_bindings -> checkout_sessions (checkout_session_id));
diesel::joinable!(memberships -> users (user_id));
diesel::joinable!(memberships -> merchants (merchant_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(reconciliation_items -> reconciliation_runs (run_id));
diesel::joinable!(export_chunks -> exports (export_id));
diesel::joinable!(emails -> account_links (account_link_id));
diesel::joinable!(emails -> notices (notice_id));

diesel::allow_tables_to_appear_in_same_query!(
    merchant_logos,
    merchants,
    api_keys,
    test_clocks,
    events,
    invoices,
    checkout_sessions,
    checkout_bindings,
    checkout_authorizations,
    relayer_accounts,
    relayed_authorizations,
    relayed_transactions,
    payments,
    idempotency_keys,
    chain_cursors,
    chain_rechecks,
    unattributed_transfers,
    webhook_endpoints,
    webhook_deliveries,
    webhook_attempts,
    webhook_incidents,
    payment_links,
    payment_link_invoices,
    emails,
    credited_transfer_logs,
    deferred_transfers,
    exports,
    export_chunks,
    reconciliation_runs,
    reconciliation_items,
    statement_settings,
    statements,
    users,
    memberships,
    sessions,
    recovery_codes,
    account_links,
    audit_log,
    notices,
);
