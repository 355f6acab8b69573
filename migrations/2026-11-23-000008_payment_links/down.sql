DROP TABLE payment_link_invoices;
DROP TABLE payment_links;
