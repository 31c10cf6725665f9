/*
 * i18n_tables.c -- the translation table of the trade documents: one row
 * per label (enum i18n_key, same order), one column per language in the
 * order en de fr it es pt nl pl sv da fi cs el no (i18n.c langs[]).
 *
 * Why C and not a TSV loaded at run time: see i18n.h.  A translator edits
 * one row; the compiler refuses a row with a missing column only when it
 * has too many, so tests/test_documents.c checks that every cell is a
 * non-empty string.  The words follow the terms of the EU VAT directive
 * (2006/112/EC art. 226) and of the e-AD (EMCS) in each language where
 * one exists; platform words (originator, fulfiller, leg) are descriptive.
 */
#include "engine/documents/i18n.h"

extern const char *const i18n_table[I18N_KEY_COUNT][I18N_LANG_COUNT];

const char *const i18n_table[I18N_KEY_COUNT][I18N_LANG_COUNT] = {
[I18N_TITLE_CONSUMER_INVOICE] = {"Invoice", "Rechnung", "Facture", "Fattura", "Factura", "Fatura", "Factuur", "Faktura", "Faktura", "Faktura", "Lasku", "Faktura", "Τιμολόγιο", "Faktura"},
[I18N_TITLE_TRANSPORT] = {"Accompanying document (excise goods)", "Begleitdokument (verbrauchsteuerpflichtige Waren)", "Document d'accompagnement (produits soumis à accise)", "Documento di accompagnamento (prodotti soggetti ad accisa)", "Documento de acompañamiento (productos sujetos a impuestos especiales)", "Documento de acompanhamento (produtos sujeitos a IEC)", "Begeleidend document (accijnsgoederen)", "Dokument towarzyszący (wyroby akcyzowe)", "Ledsagardokument (punktskattepliktiga varor)", "Ledsagedokument (punktafgiftspligtige varer)", "Saateasiakirja (valmisteveronalaiset tuotteet)", "Průvodní doklad (výrobky podléhající spotřební dani)", "Συνοδευτικό έγγραφο (προϊόντα υποκείμενα σε ΕΦΚ)", "Følgedokument (avgiftspliktige varer)"},
[I18N_TITLE_LABEL] = {"Carrier label", "Versandetikett", "Étiquette transporteur", "Etichetta di spedizione", "Etiqueta de transporte", "Etiqueta de transporte", "Verzendlabel", "Etykieta przewozowa", "Fraktsedel", "Forsendelsesetiket", "Kuljetustarra", "Přepravní štítek", "Ετικέτα μεταφορέα", "Fraktetikett"},
[I18N_TITLE_PROFORMA] = {"Proforma invoice", "Proformarechnung", "Facture pro forma", "Fattura proforma", "Factura proforma", "Fatura pró-forma", "Proformafactuur", "Faktura proforma", "Proformafaktura", "Proformafaktura", "Proformalasku", "Proforma faktura", "Προτιμολόγιο", "Proformafaktura"},
[I18N_TITLE_ORIGINATOR_INVOICE] = {"Final invoice", "Schlussrechnung", "Facture définitive", "Fattura definitiva", "Factura definitiva", "Fatura definitiva", "Eindfactuur", "Faktura końcowa", "Slutfaktura", "Slutfaktura", "Loppulasku", "Konečná faktura", "Τελικό τιμολόγιο", "Sluttfaktura"},
[I18N_TITLE_INSTRUCTION] = {"Fulfilment instruction", "Versandauftrag", "Instruction d'expédition", "Istruzioni di evasione", "Instrucción de preparación", "Instrução de expedição", "Verzendopdracht", "Instrukcja realizacji", "Plockinstruktion", "Forsendelsesinstruks", "Toimitusohje", "Pokyn k expedici", "Οδηγία εκτέλεσης", "Forsendelsesinstruks"},
[I18N_NUMBER] = {"Number", "Nummer", "Numéro", "Numero", "Número", "Número", "Nummer", "Numer", "Nummer", "Nummer", "Numero", "Číslo", "Αριθμός", "Nummer"},
[I18N_ISSUE_DATE] = {"Date of issue", "Ausstellungsdatum", "Date d'émission", "Data di emissione", "Fecha de expedición", "Data de emissão", "Datum van uitreiking", "Data wystawienia", "Utfärdandedatum", "Udstedelsesdato", "Antamispäivä", "Datum vystavení", "Ημερομηνία έκδοσης", "Utstedelsesdato"},
[I18N_SUPPLY_DATE] = {"Date of supply", "Lieferdatum", "Date de livraison", "Data di consegna", "Fecha de entrega", "Data de entrega", "Leverdatum", "Data dostawy", "Leveransdatum", "Leveringsdato", "Toimituspäivä", "Datum dodání", "Ημερομηνία παράδοσης", "Leveringsdato"},
[I18N_ORDER] = {"Order", "Bestellung", "Commande", "Ordine", "Pedido", "Encomenda", "Bestelling", "Zamówienie", "Order", "Ordre", "Tilaus", "Objednávka", "Παραγγελία", "Ordre"},
[I18N_SUPPLIER] = {"Supplier", "Lieferant", "Fournisseur", "Fornitore", "Proveedor", "Fornecedor", "Leverancier", "Dostawca", "Leverantör", "Leverandør", "Toimittaja", "Dodavatel", "Προμηθευτής", "Leverandør"},
[I18N_CUSTOMER] = {"Customer", "Kunde", "Client", "Cliente", "Cliente", "Cliente", "Klant", "Nabywca", "Kund", "Kunde", "Asiakas", "Odběratel", "Πελάτης", "Kunde"},
[I18N_VAT_ID] = {"VAT ID", "USt-IdNr.", "N° TVA", "Partita IVA", "NIF-IVA", "NIF", "Btw-nr.", "NIP UE", "Momsreg.nr", "Momsnr.", "ALV-tunniste", "DIČ", "ΑΦΜ", "MVA-nr."},
[I18N_EXCISE_NO] = {"Excise number", "Verbrauchsteuernummer", "N° d'accise", "Codice accisa", "Número CAE", "Número IEC", "Accijnsnummer", "Numer akcyzowy", "Punktskattenummer", "Punktafgiftsnummer", "Valmisteverotunniste", "Číslo spotřební daně", "Αριθμός ΕΦΚ", "Avgiftsnummer"},
[I18N_SOLD_BY] = {"Sold by", "Verkauft von", "Vendu par", "Venduto da", "Vendido por", "Vendido por", "Verkocht door", "Sprzedawca", "Säljs av", "Sælges af", "Myyjä", "Prodává", "Πωλητής", "Solgt av"},
[I18N_SHIP_TO] = {"Ship to", "Lieferadresse", "Livrer à", "Spedire a", "Enviar a", "Enviar para", "Verzenden naar", "Adres dostawy", "Leveransadress", "Leveringsadresse", "Toimitusosoite", "Doručit na", "Αποστολή σε", "Leveringsadresse"},
[I18N_CONSIGNOR] = {"Consignor", "Versender", "Expéditeur", "Speditore", "Expedidor", "Expedidor", "Afzender", "Wysyłający", "Avsändare", "Afsender", "Lähettäjä", "Odesílatel", "Αποστολέας", "Avsender"},
[I18N_CONSIGNEE] = {"Consignee", "Empfänger", "Destinataire", "Destinatario", "Destinatario", "Destinatário", "Geadresseerde", "Odbiorca", "Mottagare", "Modtager", "Vastaanottaja", "Příjemce", "Παραλήπτης", "Mottaker"},
[I18N_DISPATCH] = {"Place of dispatch", "Versandort", "Lieu d'expédition", "Luogo di spedizione", "Lugar de expedición", "Local de expedição", "Plaats van verzending", "Miejsce wysyłki", "Avsändningsort", "Afsendelsessted", "Lähetyspaikka", "Místo odeslání", "Τόπος αποστολής", "Avsendelsessted"},
[I18N_DELIVERY] = {"Place of delivery", "Lieferort", "Lieu de livraison", "Luogo di consegna", "Lugar de entrega", "Local de entrega", "Plaats van levering", "Miejsce dostawy", "Leveransort", "Leveringssted", "Toimituspaikka", "Místo dodání", "Τόπος παράδοσης", "Leveringssted"},
[I18N_DEST_TYPE] = {"Destination type", "Bestimmungsart", "Type de destination", "Tipo di destinazione", "Tipo de destino", "Tipo de destino", "Type bestemming", "Rodzaj miejsca przeznaczenia", "Destinationstyp", "Destinationstype", "Määräpaikan tyyppi", "Typ místa určení", "Τύπος προορισμού", "Destinasjonstype"},
[I18N_ORIGINATOR] = {"Originator", "Ursprungslieferant", "Fournisseur d'origine", "Fornitore di origine", "Proveedor de origen", "Fornecedor de origem", "Oorspronkelijke leverancier", "Dostawca źródłowy", "Ursprungsleverantör", "Oprindelig leverandør", "Alkuperäinen toimittaja", "Původní dodavatel", "Αρχικός προμηθευτής", "Opprinnelig leverandør"},
[I18N_FULFILLER] = {"Fulfiller", "Versandlager", "Entrepôt expéditeur", "Magazzino di spedizione", "Almacén de expedición", "Armazém de expedição", "Verzendmagazijn", "Magazyn wysyłkowy", "Avsändande lager", "Afsendende lager", "Lähettävä varasto", "Expediční sklad", "Αποθήκη αποστολής", "Avsendende lager"},
[I18N_LEG] = {"Leg", "Teilsendung", "Envoi", "Spedizione", "Envío", "Envio", "Zending", "Przesyłka", "Delsändning", "Delforsendelse", "Osatoimitus", "Zásilka", "Αποστολή", "Delsending"},
[I18N_DESCRIPTION] = {"Description", "Beschreibung", "Désignation", "Descrizione", "Descripción", "Descrição", "Omschrijving", "Opis", "Beskrivning", "Beskrivelse", "Kuvaus", "Popis", "Περιγραφή", "Beskrivelse"},
[I18N_QTY] = {"Qty", "Menge", "Qté", "Q.tà", "Cant.", "Qtd.", "Aantal", "Ilość", "Antal", "Antal", "Määrä", "Množství", "Ποσ.", "Antall"},
[I18N_UNIT_PRICE] = {"Unit price", "Einzelpreis", "Prix unitaire", "Prezzo unitario", "Precio unitario", "Preço unitário", "Stukprijs", "Cena jedn.", "Styckpris", "Stykpris", "Yksikköhinta", "Cena za jednotku", "Τιμή μονάδας", "Enhetspris"},
[I18N_VAT_RATE] = {"VAT rate", "USt-Satz", "Taux TVA", "Aliquota IVA", "Tipo IVA", "Taxa IVA", "Btw-tarief", "Stawka VAT", "Momssats", "Momssats", "ALV-kanta", "Sazba DPH", "Συντελεστής ΦΠΑ", "MVA-sats"},
[I18N_NET] = {"Net amount", "Nettobetrag", "Montant HT", "Imponibile", "Importe neto", "Valor líquido", "Nettobedrag", "Wartość netto", "Nettobelopp", "Nettobeløb", "Veroton", "Základ", "Καθαρή αξία", "Nettobeløp"},
[I18N_VAT] = {"VAT", "USt.", "TVA", "IVA", "IVA", "IVA", "Btw", "VAT", "Moms", "Moms", "ALV", "DPH", "ΦΠΑ", "MVA"},
[I18N_TAX_BASE] = {"Taxable amount", "Bemessungsgrundlage", "Base HT", "Base imponibile", "Base imponible", "Base tributável", "Maatstaf van heffing", "Podstawa opodatkowania", "Beskattningsunderlag", "Momsgrundlag", "Veron peruste", "Základ daně", "Φορολογητέα αξία", "Beregningsgrunnlag"},
[I18N_VAT_SUMMARY] = {"VAT by rate", "USt. nach Steuersatz", "TVA par taux", "IVA per aliquota", "IVA por tipo", "IVA por taxa", "Btw per tarief", "VAT według stawek", "Moms per skattesats", "Moms pr. sats", "ALV verokannoittain", "DPH podle sazeb", "ΦΠΑ ανά συντελεστή", "MVA per sats"},
[I18N_TOTAL_NET] = {"Total net", "Summe netto", "Total HT", "Totale imponibile", "Total neto", "Total líquido", "Totaal netto", "Razem netto", "Summa netto", "I alt netto", "Veroton yhteensä", "Celkem bez DPH", "Σύνολο καθαρής αξίας", "Sum netto"},
[I18N_TOTAL_VAT] = {"Total VAT", "Summe USt.", "Total TVA", "Totale IVA", "Total IVA", "Total IVA", "Totaal btw", "Razem VAT", "Summa moms", "Moms i alt", "ALV yhteensä", "DPH celkem", "Σύνολο ΦΠΑ", "Sum MVA"},
[I18N_TOTAL] = {"Total due", "Gesamtbetrag", "Total TTC", "Totale da pagare", "Total a pagar", "Total a pagar", "Totaal te betalen", "Do zapłaty", "Att betala", "I alt at betale", "Maksettava yhteensä", "Celkem k úhradě", "Πληρωτέο σύνολο", "Å betale"},
[I18N_PAGE] = {"Page", "Seite", "Page", "Pagina", "Página", "Página", "Pagina", "Strona", "Sida", "Side", "Sivu", "Strana", "Σελίδα", "Side"},
[I18N_EXCISE_CODE] = {"Excise product code", "Verbrauchsteuer-Produktcode", "Code produit accise", "Codice prodotto accisa", "Código de producto IE", "Código de produto IEC", "Accijnsproductcode", "Kod wyrobu akcyzowego", "Punktskattekod", "Punktafgiftskode", "Valmisteverokoodi", "Kód výrobku SPD", "Κωδικός προϊόντος ΕΦΚ", "Avgiftskode"},
[I18N_CN_CODE] = {"CN code", "KN-Code", "Code NC", "Codice NC", "Código NC", "Código NC", "GN-code", "Kod CN", "KN-nummer", "KN-kode", "CN-koodi", "Kód KN", "Κωδικός ΣΟ", "KN-kode"},
[I18N_LITRES] = {"Litres", "Liter", "Litres", "Litri", "Litros", "Litros", "Liter", "Litry", "Liter", "Liter", "Litraa", "Litry", "Λίτρα", "Liter"},
[I18N_PACKAGES] = {"Packages", "Packstücke", "Colis", "Colli", "Bultos", "Volumes", "Colli", "Opakowania", "Kolli", "Kolli", "Kollit", "Kusy", "Δέματα", "Kolli"},
[I18N_ALCOHOL] = {"Alcohol", "Alkohol", "Alcool", "Alcol", "Alcohol", "Álcool", "Alcohol", "Alkohol", "Alkohol", "Alkohol", "Alkoholi", "Alkohol", "Αλκοόλ", "Alkohol"},
[I18N_NON_VINTAGE] = {"non-vintage", "ohne Jahrgang", "sans millésime", "senza annata", "sin añada", "sem colheita", "zonder jaartal", "bez rocznika", "utan årgång", "uden årgang", "vuosikerraton", "bez ročníku", "χωρίς εσοδεία", "uten årgang"},
[I18N_PICK_LIST] = {"Pick list", "Kommissionierliste", "Liste de préparation", "Lista di prelievo", "Lista de picking", "Lista de recolha", "Picklijst", "Lista kompletacyjna", "Plocklista", "Plukliste", "Keräilylista", "Vychystávací seznam", "Λίστα συλλογής", "Plukkliste"},
[I18N_LOCATION] = {"Location", "Lagerplatz", "Emplacement", "Ubicazione", "Ubicación", "Localização", "Locatie", "Lokalizacja", "Lagerplats", "Lokation", "Sijainti", "Umístění", "Θέση", "Lokasjon"},
[I18N_SKU] = {"SKU", "Artikelnr.", "Réf.", "Cod. articolo", "Ref.", "Ref.", "Artikelnr.", "Indeks", "Artikelnr", "Varenr.", "Tuotekoodi", "Kód zboží", "Κωδικός", "Varenr."},
[I18N_PACKING] = {"Box packing", "Verpackung", "Colisage", "Imballaggio", "Embalaje", "Embalagem", "Verpakking", "Pakowanie", "Packning", "Pakning", "Pakkaus", "Balení", "Συσκευασία", "Pakking"},
[I18N_BOX_SIZE] = {"Bottles per box", "Flaschen je Karton", "Bouteilles par carton", "Bottiglie per cartone", "Botellas por caja", "Garrafas por caixa", "Flessen per doos", "Butelek w kartonie", "Flaskor per kartong", "Flasker pr. kasse", "Pulloa laatikossa", "Lahví v krabici", "Φιάλες ανά κιβώτιο", "Flasker per kasse"},
[I18N_BOXES] = {"Boxes", "Kartons", "Cartons", "Cartoni", "Cajas", "Caixas", "Dozen", "Kartony", "Kartonger", "Kasser", "Laatikot", "Krabice", "Κιβώτια", "Kasser"},
[I18N_PICKUP] = {"Pickup window", "Abholzeitfenster", "Créneau d'enlèvement", "Finestra di ritiro", "Franja de recogida", "Janela de recolha", "Ophaalvenster", "Okno odbioru", "Upphämtningstid", "Afhentningstidsrum", "Noutoaika", "Okno vyzvednutí", "Παράθυρο παραλαβής", "Hentevindu"},
[I18N_CURRENCY] = {"Currency", "Währung", "Devise", "Valuta", "Moneda", "Moeda", "Valuta", "Waluta", "Valuta", "Valuta", "Valuutta", "Měna", "Νόμισμα", "Valuta"},
[I18N_PRODUCER] = {"Producer/bottler", "Erzeuger/Abfüller", "Producteur/embouteilleur", "Produttore/imbottigliatore", "Productor/embotellador", "Produtor/engarrafador", "Producent/botteleerder", "Producent/rozlewca", "Producent/buteljerare", "Producent/aftapper", "Tuottaja/pullottaja", "Výrobce/plnič", "Παραγωγός/εμφιαλωτής", "Produsent/tapper"},
[I18N_ORIGIN] = {"Origin", "Herkunft", "Origine", "Origine", "Origen", "Origem", "Herkomst", "Pochodzenie", "Ursprung", "Oprindelse", "Alkuperä", "Původ", "Προέλευση", "Opprinnelse"},
[I18N_FROM] = {"From", "Von", "De", "Da", "De", "De", "Van", "Od", "Från", "Fra", "Lähettäjä", "Od", "Από", "Fra"},
[I18N_FREIGHT] = {"Freight", "Fracht", "Transport", "Trasporto", "Transporte", "Transporte", "Vracht", "Transport", "Frakt", "Fragt", "Rahti", "Doprava", "Μεταφορικά", "Frakt"},
[I18N_SERVICE_FEE] = {"Service fee", "Servicegebühr", "Frais de service", "Commissione di servizio", "Tarifa de servicio", "Taxa de serviço", "Servicekosten", "Opłata serwisowa", "Serviceavgift", "Servicegebyr", "Palvelumaksu", "Servisní poplatek", "Χρέωση υπηρεσίας", "Servicegebyr"},
[I18N_EXCISE_DUTY] = {"Excise duty", "Verbrauchsteuer", "Droits d'accise", "Accisa", "Impuesto especial", "Imposto especial de consumo", "Accijns", "Podatek akcyzowy", "Punktskatt", "Punktafgift", "Valmistevero", "Spotřební daň", "Ειδικός φόρος κατανάλωσης", "Særavgift"},
};
